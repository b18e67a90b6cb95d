/**
 * Polls until a check returns a value other than undefined, or fails with the last observation once
 * the deadline passes. For conditions that have no event to await (a process becoming healthy).
 */
export async function pollUntil<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  {
    timeoutMs = 30_000,
    intervalMs = 100,
    signal,
  }: { timeoutMs?: number; intervalMs?: number; signal?: AbortSignal } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = 'never checked';
  for (;;) {
    signal?.throwIfAborted();
    try {
      const value = await check();
      if (value !== undefined) return value;
      last = 'condition not met';
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last})`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
