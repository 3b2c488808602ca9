/**
 * Waits for a condition that another process makes true (a child process, a server), checking
 * every `intervalMs`; fails after `timeoutMs` with the last value seen. For conditions this process
 * can observe through an event, wait on the event instead.
 */
export async function eventually<T>(
  check: () => Promise<T>,
  accept: (value: T) => boolean,
  { timeoutMs = 30_000, intervalMs = 50 } = {},
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (accept(value)) return value;
    if (Date.now() > until) {
      throw new Error(
        `condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
