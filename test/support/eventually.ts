/**
 * Re-checks `probe` until it returns a value `done` accepts, and returns that
 * value; throws with the last value after `timeoutMs`. For state that lives in
 * the database, where there is no event to wait on.
 */
export async function eventually<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  { timeoutMs = 20_000, everyMs = 25 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
