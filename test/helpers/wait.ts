/** Polls `check` until it returns a truthy value or the deadline passes (no fixed sleeps). */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, deadlineMs = 20_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
