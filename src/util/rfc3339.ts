/** RFC 3339 times as nuo's flags take them: a date, a time to the second or finer, and a zone. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** An RFC 3339 time as epoch ms, or undefined when it is not one (a bare date has no instant). */
export function parseRfc3339(text: string): number | undefined {
  const ms = RFC3339.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(ms) ? undefined : ms;
}
