/**
 * Flow files: loading, validation (with positions), inputs and the JSON
 * Schema for editors.
 */
export {
  loadFlowFile,
  loadFlows,
  findFlow,
  validateFlowFiles,
  listFlowFiles,
  displayPath,
  type LoadFlowOptions,
  type FileValidation,
  type LoadedFlows,
} from './load.js';
export { FlowIssue, FlowFileError, type IssuePosition } from './errors.js';
export { checkInputNames, resolveInputs, coerceInput } from './inputs.js';
export { parseDuration, DURATION_PATTERN } from '../../util/duration.js';
export {
  FlowFileSchema,
  StepSchema,
  RetrySchema,
  InputSchema,
  TriggerSchema,
  DurationSchema,
  IDENT_RE,
  type FlowFileData,
} from './schema.js';
export { buildFlowJsonSchema, renderFlowJsonSchema } from './json-schema.js';
export { objectShapeOf } from './check-with.js';
export type { CheckOptions } from './check.js';
