/** Go-style durations, as kubectl's --timeout takes them: "90s", "1m30s", "1.5h", "250ms", "0". */
const UNITS_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

export function parseDuration(text: string): number {
  if (text === '0') return 0;
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = part.exec(text); m; m = part.exec(text)) {
    total += Number(m[1]) * (UNITS_MS[m[2] as string] as number);
    matched = part.lastIndex;
  }
  if (text.length === 0 || matched !== text.length) {
    throw new Error(`invalid duration "${text}": use a number with a unit, e.g. 90s, 5m or 1h30m`);
  }
  return total;
}
