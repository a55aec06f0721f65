import { FlowError } from '../api/errors.js';

/** RUN_NOT_FOUND naming the run. */
export function runNotFound(runId: string): FlowError {
  return new FlowError('RUN_NOT_FOUND', { runId });
}
