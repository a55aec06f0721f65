import { EXIT } from './exit-codes.js';

/**
 * The exit code of a long-running command (start, serve, ui, worker) after a
 * graceful stop: 130 for Ctrl-C (SIGINT), the Unix convention that tells a
 * shell the command was interrupted; 0 for SIGTERM and SIGHUP, the way a
 * supervisor (systemd, Docker) stops a service, which counts any other code
 * as a failure.
 */
export function stopExitCode(signal: NodeJS.Signals): number {
  return signal === 'SIGINT' ? EXIT.INTERRUPTED : EXIT.OK;
}

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
