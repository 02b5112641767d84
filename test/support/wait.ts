/** Polls `probe` until it returns a value, or fails after `timeoutMs` naming what it waited for. */
export const waitFor = async <A>(
  what: string,
  probe: () => Promise<A | undefined> | A | undefined,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<A> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
};
