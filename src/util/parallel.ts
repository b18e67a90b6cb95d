/**
 * Runs `fn` over `items` with at most `limit` calls in flight. Every item is attempted even after a
 * failure (the others are independent writes that should still land); then the first error is thrown.
 */
export async function inParallel<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  if (!(limit >= 1)) throw new Error(`inParallel: limit must be ≥ 1, got ${limit}`);
  let next = 0;
  const errors: unknown[] = [];
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      try {
        await fn(item);
      } catch (err) {
        errors.push(err);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (errors.length > 0) throw errors[0];
}
