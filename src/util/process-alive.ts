/**
 * Whether a process with this pid runs on this host. Signal 0 tests for
 * existence without touching the process; EPERM means it exists but belongs
 * to someone else. Used to tell a live owner (of a data dir, of a run) from
 * one that died with kill -9.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
