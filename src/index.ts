/**
 * msgflow's public API.
 *
 * @example
 * import { createClient } from 'msgflow';
 * const client = createClient({ apiUrl, idInstance, apiTokenInstance });
 * const history = await client.getChatHistory({ chatId: '79001112233@c.us', count: 10 });
 */
export * from './api/index.js';
export * from './client/index.js';
export * from './config/index.js';
export { defineAction, definePlugin } from './engine/action.js';
export type { ActionDefinition, ActionContext, DurableState, Logger, PluginModule, WaitOptions } from './engine/action.js';
export type { Flow, FlowStep } from './engine/flow/types.js';
export { createBus, EngineBus, type EngineEvents } from './engine/events.js';
export { ManualClock, systemClock, type Clock } from './util/clock.js';
/** The job kit and the action test kit, for plugin authors (docs/plugins.md). */
export {
  fileField,
  itemsField,
  reportField,
  maxConsecutiveFailuresField,
  readRows,
  countRows,
  pickField,
  parseBool,
  openReport,
  writeReport,
  toCsv,
  csvLine,
  defaultReport,
  JobCounters,
  FailureGuard,
  whatToFix,
  type RowSource,
  type SourcedRow,
  type ReportWriter,
  type ReportRow,
} from './actions/kit/index.js';
export { createActionTestContext, runAction, type ActionTestContext, type ActionTestOptions } from './actions/testing.js';
/**
 * The zod msgflow validates with. Plugins import it from here
 * (`import { z } from 'msgflow'`) so their schemas are built by the same zod
 * instance, and a project needs no zod dependency of its own.
 */
export { z } from 'zod';

// Embedding: run msgflow inside another program or test suite (docs/getting-started.md).
export { createLocalService, type LocalService, type LocalServiceOptions, type LocalServiceEvents } from './local/index.js';
export type { LocalRequest, LocalResponse } from './local/index.js';
export { createEngine, type Engine, type EngineOptions, type RunHandle, type StartOptions } from './engine/run/index.js';
export { createRuntime, type Runtime, type RuntimeOptions, type RuntimeFileOptions } from './runtime/runtime.js';
export { buildRegistry } from './runtime/registry.js';
export { createInProcessTransport } from './runtime/in-process-transport.js';
export { loadFlowFile as loadFlow, loadFlows, findFlow, resolveInputs, type LoadFlowOptions } from './engine/flow/index.js';
export { createRegistry, registerBuiltins, type ActionRegistry } from './engine/registry/index.js';
export { BUILTIN_JOB_ACTIONS } from './actions/index.js';
export { createStore, createMemoryStore } from './store/index.js';
export type { EngineStore, RunRecord, StepRecord, RunStatus } from './store/index.js';
export { VirtualClock } from './util/virtual-clock.js';
export {
  runFlowTests,
  loadFlowTestFile,
  findFlowTestFiles,
  renderFlowTestJsonSchema,
  type RunFlowTestsOptions,
  type FlowTestSummary,
  type CaseResult,
  type FlowTestCase,
  type FlowTestFile,
} from './runtime/flow-test/index.js';
