/**
 * The one way a test waits: on a condition, polled, with a bound that only
 * turns a hang into a clear failure (never a timed assertion).
 */

export interface WaitOptions {
  /** Fails after this long. @default 20_000 */
  timeoutMs?: number;
  /** @default 20 */
  intervalMs?: number;
  /** Appended to the timeout error (e.g. a child process's output). */
  context?: () => string;
}

/**
 * Resolves the first truthy value of `f`, polled until `timeoutMs`.
 *
 * @example
 * const url = await waitFor('serve to listen', () => /listening on (\S+)/.exec(proc.output())?.[1]);
 */
export async function waitFor<T>(what: string, f: () => T | Promise<T>, options: number | WaitOptions = {}): Promise<NonNullable<T>> {
  const o = typeof options === 'number' ? { timeoutMs: options } : options;
  const end = Date.now() + (o.timeoutMs ?? 20_000);
  for (;;) {
    const v = await f();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${o.context ? `\n--- output ---\n${o.context()}` : ''}`);
    await new Promise((r) => setTimeout(r, o.intervalMs ?? 20));
  }
}
