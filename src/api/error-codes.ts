/**
 * The error catalogue: every error msgflow raises or answers has a stable code,
 * one message template and, where it crosses HTTP, a status. Templates use
 * `{name}` placeholders filled by {@link formatError}. Texts that the spec
 * gives are copied to the letter; the others follow the same style and are
 * listed in docs/errors.md.
 */
export interface ErrorDef {
  readonly status?: number;
  readonly template: string;
}

export const ERROR_CATALOGUE = {
  // ---- API validation (spec texts) ------------------------------------------
  VALIDATION_FAILED: { status: 400, template: 'Validation failed. Details: {details}' },
  /** checkAccount with both or neither of phoneNumber/username: answered as `{status:false, reason}`. */
  CHECK_ACCOUNT_TARGET: { status: 400, template: 'request should contain phoneNumber or username: exactly one of them' },

  // ---- API domain errors (spec texts) ---------------------------------------
  CONTACT_EXISTS: { status: 400, template: 'Contact {chatId} already exists' },
  NOT_ON_MESSENGER: { status: 404, template: '{chatId} is not on {messenger}' },
  CHAT_NOT_FOUND: { status: 400, template: 'chatId not found' },
  MESSAGE_NOT_FOUND: { status: 400, template: "Message not found by id '{idMessage}'" },
  // Messages and chats
  /** archiveChat/unarchiveChat refused: `{method}` ArchiveChat or UnarchiveChat, `{reason}` as the service words it. */
  ARCHIVE_CHAT_FAILED: { status: 400, template: '{method}Error: {reason}' },
  /** deleteStatus / getStatusStatistic: no status the account posted has that id (the service's text, as it spells it). */
  STATUS_NOT_FOUND: { status: 400, template: 'ID message notfound' },
  INSTANCE_NOT_READY: { status: 200, template: 'instance is {state}: authorize the instance before checking accounts' },
  /** A method that needs the account, on an instance that is not authorized (the service's text). */
  ACCOUNT_NOT_AUTHORIZED: { status: 400, template: 'instance account not authorized' },
  /** ...on an instance that is starting: it may work in a few seconds (the service's text). */
  INSTANCE_STARTING: { status: 400, template: 'instance in starting process try later' },
  CHECK_ACCOUNT_RATE_LIMIT: { status: 200, template: 'rate_limit_exceeded: retry after {retryAfter}s' },
  /**
   * HTTP 466: the plan's monthly quota (method calls, or chats on the Developer plan) is used up. Every
   * further call fails the same way until the plan changes: fatal for the run. `reason` is the service's
   * `description` of the exceeded limit.
   */
  QUOTA_EXCEEDED: { status: 466, template: '{method}: the quota of the plan is exceeded: {reason}' },
  /** checkWhatsapp's 400 `check phone number timeout limit exceeded`: the check did not finish in time; it may work later. */
  CHECK_PHONE_TIMEOUT: { status: 400, template: 'check phone number timeout limit exceeded' },
  /**
   * HTTP 499: the request was closed before the service answered it (the connection ended, a timeout on
   * the way): it may have been processed, like a timeout.
   */
  REQUEST_CLOSED: { status: 499, template: '{method}: the request was closed before the service answered' },
  /** HTTP 500 `File from url exceeded max upload size`: the file at urlFile is larger than the service sends; final for this file. */
  FILE_URL_TOO_LARGE: { status: 500, template: 'File from url exceeded max upload size' },

  // ---- transport-level answers of the local service -------------------------
  UNAUTHORIZED: { status: 401, template: 'wrong apiTokenInstance for this instance' },
  INSTANCE_NOT_FOUND: { status: 403, template: 'unknown instance' },
  METHOD_NOT_FOUND: { status: 404, template: "unknown method '{method}'" },
  PATH_NOT_FOUND: { status: 404, template: 'not found: expected /waInstance<idInstance>/<method>/<apiTokenInstance>' },
  HTTP_METHOD_NOT_ALLOWED: { status: 405, template: '{method} expects {expected}, got {got}' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, template: "Content-Type must be application/json, got '{got}'" },
  MALFORMED_JSON: { status: 400, template: 'Validation failed. Details: request body is not valid JSON ({reason})' },
  BODY_NOT_OBJECT: { status: 400, template: 'Validation failed. Details: request body must be a JSON object' },
  /** A JSON body nested deeper than util/http-body.ts MAX_JSON_DEPTH. */
  BODY_TOO_DEEP: { status: 400, template: 'Validation failed. Details: request body is {reason}' },
  /** A request-target that is not a path this service can read (`//`, a backslash, ...). */
  BAD_REQUEST_TARGET: { status: 400, template: 'bad request target: {reason}' },
  /** A request node's HTTP parser cannot read (unknown method, bad Content-Length, raw non-ASCII byte in the target). */
  MALFORMED_REQUEST: { status: 400, template: 'malformed request: {reason}' },
  PAYLOAD_TOO_LARGE: { status: 413, template: 'request body is larger than {limit} bytes' },
  TOO_MANY_REQUESTS: { status: 429, template: '{method}: more than {limit} requests per second; retry after {retryAfter}s' },
  FILE_NOT_FOUND: { status: 404, template: 'file not found or expired' },
  INTERNAL: { status: 500, template: 'internal error: {reason}' },

  // ---- local service: fetching urlFile (sendFileByUrl) ----------------------
  // `{url}` is the link without query string, fragment or credentials.
  FILE_FETCH_FAILED: { template: 'urlFile {url}: {reason}' },
  FILE_FETCH_STATUS: { template: 'urlFile {url}: the server answered HTTP {status}{statusText}' },
  FILE_FETCH_TIMEOUT: { template: 'urlFile {url}: no answer within {timeoutMs} ms ({phase})' },
  FILE_TOO_LARGE: { template: 'urlFile {url}: the file is larger than the {limit} bytes allowed ({seen})' },
  FILE_TOO_MANY_REDIRECTS: { template: 'urlFile {url}: more than {limit} redirects' },
  /** A urlFile target (or a redirect) on a loopback, private or link-local address, refused unless local.fetch.allowPrivate. */
  FILE_FETCH_PRIVATE: {
    template: 'urlFile {url}: {host} resolves to {address}, a {range} address; set local.fetch.allowPrivate: true to allow it',
  },

  // ---- local service: its data directory ------------------------------------
  /** A file under local.dataDir that cannot be read as the service wrote it: start is refused. */
  LOCAL_DATA_INVALID: { template: 'local service data {file}{location}: {reason}' },
  /** A write to local.dataDir failed: the request is answered 500 and nothing changed. */
  LOCAL_WRITE_FAILED: { status: 500, template: 'local service could not write {file}: {reason}' },

  // ---- client ---------------------------------------------------------------
  /** An answer of the service with no more specific code (e.g. an unexpected 4xx status). */
  API_ERROR: { template: '{method} failed with HTTP {status}: {message}' },
  /** The service answered 5xx: it may work again later (retryable). */
  SERVER_ERROR: { template: '{method} failed with HTTP {status}: {message}' },
  NETWORK_ERROR: { template: '{method}: network error {reason}' },
  TIMEOUT: { template: '{method}: no answer within {timeoutMs} ms' },
  /**
   * Connection refused on a client's first call (the service never answered it): apiUrl or the
   * service is wrong, and retrying would only delay saying so. `target` is `instance 'NAME': ` or ''.
   */
  CONNECTION_REFUSED: {
    template:
      "{target}nothing is listening at apiUrl {apiUrl} ({method}: connection refused); start the service there or correct the instance's apiUrl",
  },
  BAD_RESPONSE: { template: '{method}: unexpected response ({reason})' },
  CLIENT_OPTIONS_INVALID: { template: 'invalid client options: {details}' },
  CLIENT_CLOSED: { template: '{method}: the client is closed' },

  // ---- config and flows -----------------------------------------------------
  CONFIG_INVALID: { template: '{location} {path}: {reason}' },
  CONFIG_NOT_FOUND: { template: "config file not found: {file} (no msgflow project here? 'msgflow init' creates one)" },
  ENV_MISSING: { template: '{location} {path}: environment variable {name} is not set and has no default' },
  YAML_SYNTAX: { template: '{location}: {reason}' },
  YAML_TOO_LARGE: { template: '{file}: {size} bytes is more than the {limit} bytes a YAML file may have' },
  YAML_TOO_MANY_ALIASES: { template: '{file}: too many alias expansions (YAML alias bomb?)' },
  FLOW_INVALID: { template: '{location} {path}: {reason}' },
  FLOW_NOT_FOUND: { template: "flow '{name}' not found in {dir}" },
  UNKNOWN_ACTION: { template: "{location} {path}: unknown action '{action}'{hint}" },
  EXPRESSION_ERROR: { template: '{location}: expression error in {expression}: {reason}' },
  /** An expression went over a budget (string length, array length, steps): a poison pill stops here, not in an out-of-memory abort. */
  EXPRESSION_LIMIT: { template: '{location}: expression {expression} stopped: {reason}' },
  /** `--input key=value` names no input of the flow, or its value does not fit the input's type: a usage error (exit 2). */
  INPUT_ARG_INVALID: { template: '{location} inputs.{input}: {reason}' },
  /** A data input holds more rows than it may (`inputs.<name>.maxRows`). */
  INPUT_TOO_LARGE: { template: '{location} inputs.{input}: {reason}' },
  /** A port msgflow must listen on is taken by another process. */
  PORT_IN_USE: {
    template: 'port {port} is already in use{host}: stop what listens there, or set {key} to another port (0 picks a free one)',
  },
  ACTION_FAILED: { template: "step '{step}' ({action}) failed: {reason}" },
  /** A sub-flow run (`uses: flow/<name>`) ended failed or cancelled: its step fails (definite: the child is not started again). */
  SUBFLOW_FAILED: { template: "step '{step}' (flow/{flow}): sub-flow run {runId} {status}: {reason}" },
  /** `msgflow backfill` of a flow without a schedule, a reversed range, or too many slots. */
  BACKFILL_INVALID: { status: 400, template: "cannot backfill flow '{flow}': {reason}" },
  /** A sub-flow step's `with:` does not fit the child flow's `inputs:` (run time; `msgflow validate` says it with file:line:col). */
  SUBFLOW_INPUT_INVALID: { template: "flow '{flow}' inputs.{input}: {reason}" },
  STEP_TIMEOUT: { template: "step '{step}' timed out after {timeoutMs} ms" },
  /** A step's `with`, after templates, does not fit the action's input schema (run time). */
  STEP_INPUT_INVALID: { template: "step '{step}'{item}: {details}" },
  /** `msgflow start`/`run` after the engine began shutting down. */
  ENGINE_STOPPED: { template: 'the engine is shutting down: {reason}' },
  RUN_NOT_FOUND: { template: "run '{runId}' not found" },
  /** `runs retry` (or the dashboard's Retry) of a run that succeeded: it left nothing to redo. */
  NOTHING_TO_RETRY: { status: 409, template: "run {runId} succeeded: nothing to retry ('msgflow run {flow}' starts a new run)" },
  /** The engine's store (Redis, the state directory) cannot be reached or written: runs pause, never fail. */
  STORE_UNAVAILABLE: { template: 'the {driver} store is unavailable: {reason}' },
  /** Another process took over the run (this one's lease lapsed): it stops before any further write. */
  RUN_OWNERSHIP_LOST: { template: 'this process no longer owns the run: {reason}' },
  /** A run of the flow (or of its concurrency group) is executing in a live process. */
  RUN_LIVE: { template: "{what} is live in {holder}; --wait waits for it, 'msgflow runs cancel {runId}' stops it" },
  /** A second `msgflow start` on one store. */
  DAEMON_RUNNING: { template: 'msgflow start is already running on this store ({holder})' },
  /** A dry run reached a method that changes something. */
  DRY_RUN_WRITE: { template: 'dry run: {method} changes something on the instance; a dry run calls no writing method' },
  /** A run whose owner process died too often is not resumed again. */
  RUN_CRASHED: { template: 'crashed the process {count} times (last: {last})' },
  /**
   * BullMQ executor: a worker died during a writing call of this item; the
   * call may have reached the service, so it is not made again (at most once).
   */
  ITEM_OUTCOME_UNKNOWN: {
    template:
      "step '{step}' item {item}: a worker stopped during {action}; the call may have reached the service, so it is not made again (check the instance, then msgflow runs retry)",
  },
  /**
   * BullMQ executor: a worker stalled past its job lock finds the item taken
   * over (another worker holds its call): it leaves the item, never calls.
   */
  ITEM_TAKEN_OVER: {
    template: "step '{step}' item {item}: another worker took it over while this one was stalled; it is left to that worker",
  },
  /** BullMQ executor: a worker could not work the item (after the job's attempts). */
  ITEM_WORKER_FAILED: { template: "step '{step}' item {item}: the workers could not work it: {reason}" },
  /** BullMQ executor: a single step's job failed all its attempts on the workers (the store stayed down, say). */
  STEP_WORKER_FAILED: { template: "step '{step}': the workers could not work it: {reason}" },
  /** BullMQ executor: a worker that cannot work an item here (its flows differ from the run's): the job is tried again later. */
  ITEM_NOT_WORKABLE: { template: 'this worker cannot work the item: {reason}' },
  /** `msgflow run --resume` of a run that ended. */
  RUN_FINISHED: {
    template: 'run {runId} is {status}: only an unfinished run can be resumed (msgflow runs retry {runId} redoes its failed items)',
  },
  /** `msgflow run --resume` of a run that ended or was cancelled while it was being claimed. */
  RUN_NOT_RESUMABLE: { template: 'run {runId} cannot be resumed (see msgflow runs show {runId})' },
  /** `msgflow runs retry` (or the dashboard's Retry) of a run that has not ended: it is resumed, not retried. */
  RUN_UNFINISHED: { template: "run {runId} is unfinished ({status}): resume it with 'msgflow run {flow} --resume {runId}'" },
  /**
   * An instance-wide pause holds calls of a method (engine/run/pauses.ts): the
   * call was not made. The unit runner waits until `until` and calls again.
   */
  INSTANCE_PAUSED: { template: "{scope} of instance '{instance}' paused until {until}: {reason}" },
  /** A plugin's failure that trying again cannot change (DefiniteError): recorded, never retried. */
  DEFINITE_FAILURE: { template: '{reason}' },
  /** An instance name config.yaml does not have (`known`: the names it has, when said). */
  INSTANCE_UNKNOWN: { template: "instance '{name}' is not in {file}{known}" },
  /** local.dataDir is held by another msgflow process. */
  LOCAL_DATA_IN_USE: { template: 'the local service data in {dir} is in use by process {pid}{command}{next}' },
  /** A data file (a flow input's file, a job's `file:`) that cannot be read as its type. */
  DATA_FILE_INVALID: { template: '{file}: {reason}' },
  /** A flow test case that cannot run as written (its event, messages or instances). */
  TEST_CASE_INVALID: { template: '{reason}' },
  PLUGIN_LOAD_FAILED: { template: "plugin '{plugin}' could not be loaded: {reason}" },
  PLUGIN_INVALID: { template: "plugin '{plugin}': {reason}" },
  /** A usage error: a command line or a config that cannot be used as written. Never control flow. */
  USAGE: { template: '{reason}' },

  // ---- dashboard and HTTP API (msgflow start / msgflow ui) ------------------
  /** Binding the dashboard to a non-loopback address without a token would let anyone on the network start runs. */
  UI_UNSAFE_BIND: {
    template:
      'ui.host {host} is not a loopback address and ui.token is empty: set ui.token (e.g. ui.token: ${MSGFLOW_UI_TOKEN}) or bind to 127.0.0.1',
  },
  UI_UNAUTHORIZED: { status: 401, template: 'this request changes state: send the header Authorization: Bearer <ui.token>' },
  UI_FORBIDDEN: { status: 403, template: '{reason}' },
  UI_BAD_REQUEST: { status: 400, template: '{field}: {reason}' },
  UI_NOT_FOUND: { status: 404, template: '{what} not found' },
  UI_CONFLICT: { status: 409, template: '{reason}' },
  /** One client address holds as many event streams (`GET /api/events`) as it may. */
  UI_STREAMS_PER_CLIENT: {
    status: 429,
    template: 'this client address already holds {limit} event streams, the most it may: close one (a page, a msgflow run) first',
  },
  /** The dashboard holds as many event streams as it serves in all. */
  UI_STREAMS_FULL: { status: 503, template: 'the dashboard already serves {limit} event streams, the most it serves: retry later' },
  /** `msgflow run` handed its run to the daemon's API, which answered with an error. */
  DAEMON_API_REFUSED: { template: "the daemon's dashboard at {url} refused the run: {message} ({code})" },
  /** `msgflow run` could not reach the daemon's dashboard, or lost it while following the run. */
  DAEMON_API_UNREACHABLE: { template: "the daemon's dashboard at {url} cannot be reached: {reason}" },

  // ---- http.request and secrets ---------------------------------------------
  /**
   * http.request: the server answered a status outside 2xx (`failOnStatus: false` returns it instead).
   * Classified by the status: 408, 429 and 5xx retryable, any other definite. `{request}` is
   * `GET https://host/path` (never the query string, which may hold a key).
   */
  HTTP_STATUS: { template: '{request} answered HTTP {status}' },
  /** http.request to a loopback, private or link-local address, refused unless the step allows it. */
  HTTP_ADDRESS_REFUSED: {
    template:
      "{request}: {host} is {address}, a {range} address; set allowPrivate: true in the step's with:, or list the host under http.allowPrivate in config.yaml, to allow it",
  },
  /** http.request: the answer's body is longer than `maxResponseBytes`. */
  HTTP_RESPONSE_TOO_LARGE: { template: '{request}: the answer is longer than the {limit} bytes allowed (maxResponseBytes)' },
  /** `${{ secrets.NAME }}` names a secret none of the sources has (environment, secrets.file, secrets.dir). */
  SECRET_MISSING: { template: '{location} {path}: secret {name} is not set ({sources})' },

  // ---- built-in job actions -------------------------------------------------
  /** An action's input (a data file, a row, a field) is unusable as a whole. */
  ACTION_INPUT_INVALID: { template: '{action} {field}: {reason}' },
  /** A job stopped before its end for a reason the user must act on (e.g. instance not authorized). */
  JOB_STOPPED: { template: '{action} stopped: {reason}' },
  /** A campaign plan file (`msgflow run --plan`) that cannot be read or is not a plan: the file, the field and what is wrong. */
  PLAN_INVALID: { template: '{file}: {field}: {reason}' },
  /** `msgflow apply` of a plan whose inputs changed since it was made: which ones. */
  PLAN_OUTDATED: {
    template:
      "{file} is out of date: {changed} changed since it was made ({createdAt}); make a new one with 'msgflow run {flow} --plan {file}'",
  },
} as const satisfies Record<string, ErrorDef>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** Templates split once into text and parameter names (`['a ', 'x', ' b']` for `a {x} b`): bulk jobs format one per refused record. */
// cache: a function of the code alone (the catalogue is constant), bounded by the number of codes
const SPLIT_TEMPLATES = new Map<ErrorCode, readonly string[]>();

/** Fills a template; missing parameters stay visible as `{name}` rather than vanish. */
export function formatError(code: ErrorCode, params: Record<string, unknown> = {}): string {
  let parts = SPLIT_TEMPLATES.get(code);
  if (parts === undefined) {
    const def: ErrorDef = ERROR_CATALOGUE[code];
    parts = def.template.split(/\{(\w+)\}/);
    SPLIT_TEMPLATES.set(code, parts);
  }
  let out = parts[0]!;
  for (let i = 1; i < parts.length; i += 2) {
    const key = parts[i]!;
    out += (key in params && params[key] !== undefined ? String(params[key]) : `{${key}}`) + parts[i + 1]!;
  }
  return out;
}

export function statusOf(code: ErrorCode): number | undefined {
  const def: ErrorDef = ERROR_CATALOGUE[code];
  return def.status;
}
