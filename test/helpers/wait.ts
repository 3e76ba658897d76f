/**
 * Polls until `read` answers what `done` accepts, or `ms` pass, and returns the last answer: the
 * caller's assertion on it says what was expected, so a timeout fails with the value seen. The one
 * way a test waits for a state (`eventually(() => flag, Boolean)` for a condition).
 */
export async function eventually<T>(read: () => T | Promise<T>, done: (value: T) => boolean, ms = 5000, everyMs = 25): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
