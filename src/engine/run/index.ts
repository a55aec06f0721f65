/**
 * The flow runner: durable runs of loaded flows.
 *
 * @example
 * import { createEngine } from './engine/run/index.js';
 */
export { createEngine, busLogger } from './engine.js';
export type { Engine, EngineOptions, RunHandle, StartOptions } from './types.js';
export { retryDelay } from './backoff.js';
export { newRunId } from './run-id.js';
export { waitKey } from './durable-waits.js';
export type { RunRecord, StepRecord, ItemResult, RunStatus } from '../../store/types.js';
