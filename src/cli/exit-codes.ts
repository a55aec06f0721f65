/** Exit codes of the `msgflow` command. */
export const EXIT = Object.freeze({
  /** Success. */
  OK: 0,
  /** The command ran and failed (invalid flow, failed run, bad config...). */
  FAILURE: 1,
  /** The command line itself is wrong (unknown command or option, missing argument). */
  USAGE: 2,
  /** Stopped by Ctrl-C (SIGINT): 128 + 2, as shells report it. */
  INTERRUPTED: 130,
  /** `msgflow run` stopped by SIGTERM: 128 + 15. */
  TERMINATED: 143,
});

/** A command-line mistake: printed with a pointer to --help, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
