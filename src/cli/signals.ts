/**
 * The signals that stop a long-running command gracefully. SIGHUP is among
 * them: a closed terminal or a hangup from a supervisor must not kill a
 * daemon without checkpointing its runs.
 */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Resolves with the name of the first stop signal received. `cancel` (e.g.
 * when start-up failed) removes the listeners; the promise then never settles.
 */
export function untilSignal(cancel?: AbortSignal): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const off = () => {
      for (const s of STOP_SIGNALS) process.off(s, on);
    };
    const on = (sig: NodeJS.Signals) => {
      off();
      resolve(sig);
    };
    for (const s of STOP_SIGNALS) process.on(s, on);
    cancel?.addEventListener('abort', off, { once: true });
  });
}
