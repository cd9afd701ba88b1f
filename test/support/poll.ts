/**
 * Polls a condition until it holds: for what the code under test does and announces nowhere
 * a test can wait on (a count in server state, a file written, a port answering). The bound
 * only names what never came, well before the test's own timeout (20 s).
 */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
