/**
 * msgflow's public API.
 *
 * @example
 * import { createClient } from 'msgflow';
 * const client = createClient({ apiUrl, idInstance, apiTokenInstance });
 * const history = await client.getChatHistory({ chatId: '79001112233@c.us', count: 10 });
 */
export {
  isApiMethod,
  defaultRateLimits,
  API_METHODS,
  type ApiMethod,
  type HttpMethod,
  type MethodSpec,
  METHOD_SPECS,
  NO_PARAMETER_METHODS,
  type RateLimits,
} from './api/methods.js';
export {
  isPersonalChatId,
  isChatId,
  chatKind,
  phoneOfChatId,
  personalChatId,
  PERSONAL_SUFFIX,
  GROUP_SUFFIX,
  USERNAME_RE,
  PHONE_MIN_DIGITS,
  PHONE_MAX_DIGITS,
  type ChatKind,
} from './api/chat-id.js';
export { formatError, statusOf, type ErrorDef, ERROR_CATALOGUE, type ErrorCode } from './api/error-codes.js';
export {
  combineErrors,
  isMsgflowError,
  type MsgflowErrorOptions,
  MsgflowError,
  ValidationError,
  ApiError,
  AccountCheckError,
  RateLimitError,
  NetworkError,
  ConfigError,
  FlowError,
} from './api/errors.js';
export { redact, redactedPath, TOKEN_PLACEHOLDER, INSTANCE_PLACEHOLDER, type Secrets, MIN_SECRET_LENGTH } from './api/redact.js';
export {
  TYPING_TYPES,
  type TypingType,
  CAPTION_MAX,
  MESSAGE_MAX,
  RECEIVE_TIMEOUT_MIN,
  RECEIVE_TIMEOUT_MAX,
  SEND_DELAY_MIN,
  SEND_DELAY_MAX,
  ID_MESSAGE_MIN,
  TYPING_TIME_MIN,
  TYPING_TIME_MAX,
  SETTINGS_SWITCHES,
  type SettingsSwitch,
  REQUEST_SHAPES,
  REQUEST_SCHEMAS,
  STRICT_REQUEST_SCHEMAS,
} from './api/schemas.js';
export {
  type AddContactRequest,
  type EditContactRequest,
  type DeleteContactRequest,
  type GetChatHistoryRequest,
  type GetMessageRequest,
  type SendFileByUrlRequest,
  type LastOutgoingMessagesRequest,
  type CheckAccountRequest,
  type GetStateInstanceRequest,
  type SendMessageRequest,
  type CheckWhatsappRequest,
  type GetSettingsRequest,
  type SetSettingsRequest,
  type ShowMessagesQueueRequest,
  type ClearMessagesQueueRequest,
  type LastIncomingMessagesRequest,
  type ReceiveNotificationRequest,
  type DeleteNotificationRequest,
  type ParsedRequest,
  type MessageType,
  type StatusMessage,
  type ChatType,
  type TypeMessage,
  TYPE_MESSAGES,
  FILE_TYPE_MESSAGES,
  type Message,
  type AddContactResponse,
  type EditContactResponse,
  type DeleteContactResponse,
  type GetChatHistoryResponse,
  type GetMessageResponse,
  type SendFileByUrlResponse,
  type LastOutgoingMessagesResponse,
  type CheckAccountResponse,
  type GetStateInstanceResponse,
  type SendMessageResponse,
  type CheckWhatsappResponse,
  type InstanceSettings,
  type GetSettingsResponse,
  type SetSettingsResponse,
  type QueuedMessage,
  type ShowMessagesQueueResponse,
  type ClearMessagesQueueResponse,
  type LastIncomingMessagesResponse,
  type ReceiveNotificationResponse,
  type DeleteNotificationResponse,
  type ResponseMap,
  type RequestMap,
  type ErrorBody,
  type StatusFalseBody,
  type RateLimitBody,
  type CallOptions,
  type InstanceApi,
} from './api/types.js';
export {
  isNotificationType,
  NOTIFICATION_TYPES,
  type NotificationType,
  INSTANCE_STATES,
  type InstanceState,
  OUTGOING_STATUSES,
  type OutgoingStatus,
  type InstanceData,
  type SenderData,
  type FileMessageData,
  type NotificationMessageData,
  type MessageNotification,
  type IncomingMessageReceived,
  type OutgoingMessageReceived,
  type OutgoingAPIMessageReceived,
  type OutgoingMessageStatus,
  type StateInstanceChanged,
  type NotificationBody,
  type ReceivedNotification,
} from './api/notifications.js';
export { issueToValidationError, validateRequest, checkAccountTargetRule, type ValidateOptions } from './api/validate.js';
export { classify, type FailureClass, FATAL_CODES, RETRYABLE_CODES } from './api/failure.js';
export { createClient, type MsgflowClient } from './client/client.js';
export { createHttpTransport, type HttpTransportOptions } from './client/http-transport.js';
export {
  CLIENT_DEFAULTS,
  parseClientOptions,
  type ClientLogger,
  type ClientOptions,
  type JitterMode,
  type ResolvedClientOptions,
} from './client/options.js';
export { computeBackoff, parseRetryAfter, type BackoffOptions } from './client/backoff.js';
export { interpretResponse, type Outcome, type RetryRule } from './client/response.js';
export type { Transport, TransportRequest, TransportResponse } from './client/transport.js';
export {
  StoreSchema,
  type StoreConfig,
  InstanceSchema,
  UiSchema,
  WebhookSchema,
  ExecutorSchema,
  type ExecutorConfig,
  ConfigSchema,
  type InstanceConfig,
  type ConfigData,
  type UiConfig,
  type WebhookConfig,
} from './config/schema.js';
export {
  AccountSchema,
  PopulationSchema,
  RateLimitsSchema,
  LocalInstanceSchema,
  NetworkSchema,
  LocalSchema,
  type LocalConfig,
  type LocalInstanceConfig,
  type NetworkConfig,
  type AccountConfig,
  type PopulationConfig,
} from './local/config.js';
export { parseConfig, loadConfig, resolveFromConfig, type Config, issuesToConfigErrors, type LoadConfigOptions } from './config/load.js';
export { interpolateEnv } from './config/interpolate.js';
export { defineAction, definePlugin, inputFile, outputFile } from './engine/action.js';
export type { FileFieldMeta, ActionDefinition, ActionContext, DurableState, Logger, PluginModule, WaitOptions } from './engine/action.js';
/** Control errors an action throws to tell the engine how to go on (docs/plugins.md). */
export { PauseError, DefiniteError, type PauseInfo } from './engine/control.js';
export { pauseWait, type PauseRule, type PauseRecord } from './engine/run/pauses.js';
export { interceptApi, type ApiInterceptor, type ApiCall, type InterceptedApi } from './client/interceptors.js';
export type { Flow, FlowStep } from './engine/flow/types.js';
export { createBus, EngineBus, type EngineEvents } from './engine/events.js';
export { ManualClock, machineZone, systemClock, zoneOf, type Clock } from './util/clock.js';
/** The job kit and the action test kit, for plugin authors (docs/plugins.md). */
export { fileField, itemsField, reportField, maxConsecutiveFailuresField } from './actions/kit/inputs.js';
export { readRows, countRows, pickField, parseBool, type RowSource, type SourcedRow } from './engine/flow/data-file.js';
export { openReport, writeReport, toCsv, csvLine, defaultReport, type ReportWriter, type ReportRow } from './actions/kit/report.js';
export { JobCounters } from './actions/kit/counters.js';
export { FailureGuard, whatToFix } from './actions/kit/guard.js';
export { createActionTestContext, runAction, type ActionTestContext, type ActionTestOptions } from './actions/testing.js';
/**
 * The zod msgflow validates with. Plugins import it from here
 * (`import { z } from 'msgflow'`) so their schemas are built by the same zod
 * instance, and a project needs no zod dependency of its own.
 */
export { z } from 'zod';

// Embedding: run msgflow inside another program or test suite (docs/getting-started.md).
export { createLocalService, type LocalService, type LocalServiceOptions, type LocalServiceEvents } from './local/service.js';
export type { LocalRequest, LocalResponse } from './local/types.js';
export { createEngine } from './engine/run/engine.js';
export type { Engine, EngineOptions, RunHandle, StartOptions } from './engine/run/types.js';
export { createRuntime, type Runtime, type RuntimeOptions, type RuntimeFileOptions } from './runtime/runtime.js';
export { createDaemon, type Daemon, type DaemonEvent, type DaemonOptions, type DaemonState, type DaemonStatus } from './runtime/daemon.js';
export type { ReloadSummary } from './runtime/reload.js';
export {
  createInProcessEngineClient,
  type InProcessEngineClient,
  type InProcessEngineClientOptions,
  type LocalRun,
} from './runtime/engine-client/in-process.js';
export { createHttpEngineClient, type HttpEngineClientOptions } from './runtime/engine-client/http.js';
export type {
  CancelOutcome,
  EngineClient,
  FollowedEvent,
  FollowedRun,
  FollowOptions,
  InstancePause,
  RunListQuery,
  RunView,
  StartRunOptions,
  StepView,
} from './runtime/engine-client/types.js';
export { buildRegistry } from './runtime/registry.js';
export { createInProcessTransport } from './runtime/in-process-transport.js';
export { loadFlowFile as loadFlow, loadFlows, findFlow, type LoadFlowOptions } from './engine/flow/load.js';
export { resolveInputs } from './engine/flow/inputs.js';
export { createRegistry, type ActionRegistry } from './engine/registry/registry.js';
export { registerBuiltins } from './engine/registry/builtins.js';
export { BUILTIN_JOB_ACTIONS } from './actions/builtins.js';
export { createStore } from './store/create.js';
export { createMemoryStore } from './store/memory-store.js';
export type { EngineStore, RunRecord, StepRecord, RunStatus } from './store/types.js';
export { VirtualClock } from './util/virtual-clock.js';
export {
  runFlowTests,
  loadFlowTestFile,
  findFlowTestFiles,
  type RunFlowTestsOptions,
  type FlowTestSummary,
} from './runtime/flow-test/suite.js';
export { renderFlowTestJsonSchema, type FlowTestCase, type FlowTestFile } from './runtime/flow-test/schema.js';
export type { CaseResult } from './runtime/flow-test/run.js';
