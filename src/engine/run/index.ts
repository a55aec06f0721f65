/**
 * The flow runner: durable runs of loaded flows.
 *
 * @example
 * import { createEngine } from './engine/run/index.js';
 */
export { createEngine, busLogger, flowHash, flowWrites, inputsHash, RUN_CONTROL_NS } from './engine.js';
export { LeaseOwner, holderDead, processRuns, procStat, describeHolder, defaultHostId, DEFAULT_LEASE_TTL_MS } from './ownership.js';
export type { CancelResult, Engine, EngineOptions, RunFingerprint, RunHandle, StartOptions } from './types.js';
export { retryDelay } from './backoff.js';
export { newRunId } from './run-id.js';
export { waitKey } from './durable-waits.js';
export type { RunRecord, StepRecord, ItemResult, RunStatus } from '../../store/types.js';
