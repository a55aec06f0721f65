/**
 * The one way a test waits: on a condition, polled, with a bound that only
 * turns a hang into a clear failure (never a timed assertion).
 */

export interface WaitOptions {
  /**
   * Fails after this long. Generous: CI shares its 2 cores with other builds, where a
   * process start that takes 1 s alone took 20 s; the bound only turns a hang into a failure.
   * @default 60_000
   */
  timeoutMs?: number;
  /** The longest pause between two polls; the first polls follow quickly (1, 2, 4 … ms). @default 50 */
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
  const end = Date.now() + (o.timeoutMs ?? 60_000);
  for (let attempt = 0; ; attempt++) {
    const v = await f();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${o.context ? `\n--- output ---\n${o.context()}` : ''}`);
    await new Promise((r) => setTimeout(r, Math.min(o.intervalMs ?? 50, 2 ** attempt)));
  }
}
