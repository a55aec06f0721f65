/**
 * How a job reacts to a failed call, by its class (classify(), decided by the
 * error's catalogue code, never its text):
 *
 * - fatal (wrong token, unknown instance, instance not authorized, nothing
 *   ever answered at apiUrl): the job
 *   stops at the first one with JOB_STOPPED saying what to fix;
 * - retryable (network, 5xx, 429) that the client's own retries did not
 *   overcome: recorded for the item; `max` of them in a row stop the job;
 * - definite (400, 404...): recorded for the item, never retried.
 */
import { FlowError, isMsgflowError } from '../../api/errors.js';
import { classify, type FailureClass } from '../../api/failure.js';

/** What the user must do about a fatal error, by its code. */
export function whatToFix(error: unknown, instanceName: string): string {
  const code = isMsgflowError(error) ? error.code : undefined;
  switch (code) {
    case 'UNAUTHORIZED':
      return `the service refused the token of instance '${instanceName}' (HTTP 401): check apiTokenInstance in config.yaml`;
    case 'INSTANCE_NOT_FOUND':
      return `the service does not know instance '${instanceName}' (HTTP 403): check idInstance and apiUrl in config.yaml`;
    case 'CONNECTION_REFUSED':
      return `nothing is listening at apiUrl ${String((error as { params: { apiUrl?: unknown } }).params.apiUrl)} of instance '${instanceName}' (connection refused): start the service there or correct instances.${instanceName}.apiUrl in config.yaml`;
    case 'QUOTA_EXCEEDED':
      return `instance '${instanceName}' used up the quota of its plan (HTTP 466: ${(error as { serviceMessage?: string }).serviceMessage ?? ''}): change the plan or wait for the next month`;
    case 'INSTANCE_NOT_READY':
      return `instance '${instanceName}' is not ready (${(error as { reason?: string }).reason ?? 'not authorized'}): authorize it (scan the QR code) and run again`;
    default:
      return `instance '${instanceName}' cannot serve: ${error instanceof Error ? error.message : String(error)}`;
  }
}

export class FailureGuard {
  private consecutive = 0;

  /**
   * @param action the job's name, for messages
   * @param max retryable failures in a row that stop the job
   */
  constructor(
    private readonly action: string,
    private readonly instanceName: string,
    private readonly max: number,
  ) {}

  /** A call succeeded (or failed definitely: the service answered): the run of failures is over. */
  ok(): void {
    this.consecutive = 0;
  }

  /**
   * Classifies a failure; throws JOB_STOPPED for a fatal one, and for the
   * retryable one that makes `max` in a row. `progress` says what is kept,
   * e.g. `12 of 40 numbers have a result`. Count and report the failed
   * record before calling it (only a fatal error leaves its record
   * unanswered), so that "N calls in a row failed" and the job's `failed`
   * counter say the same.
   */
  fail(error: unknown, progress: string): FailureClass {
    const klass = classify(error);
    if (klass === 'fatal') {
      throw new FlowError(
        'JOB_STOPPED',
        { action: this.action, reason: `${whatToFix(error, this.instanceName)}. ${progress}` },
        { cause: error },
      );
    }
    if (klass === 'definite') {
      this.consecutive = 0;
      return klass;
    }
    if (++this.consecutive >= this.max) {
      const last = error instanceof Error ? error.message : String(error);
      throw new FlowError(
        'JOB_STOPPED',
        {
          action: this.action,
          reason: `${this.consecutive} calls in a row failed (last: ${last}); the rest were not attempted. ${progress}`,
        },
        { cause: error },
      );
    }
    return klass;
  }
}
