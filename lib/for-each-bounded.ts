/**
 * Runs `fn` for every item, at most `limit` at once, in order of start.
 * Resolves when every item has been run; if any `fn` rejected, rejects with
 * the first rejection after the rest have run (nothing is left running).
 */
export async function forEachBounded<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await fn(items[index]!, index);
    }
  };
  const results = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
}
