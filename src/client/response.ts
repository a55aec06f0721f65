/**
 * What an answer of the service means: a typed result, or a typed error with
 * whether it may be retried. Pure: no I/O, no clock beyond `now`.
 */
import { AccountCheckError, ApiError, MsgflowError, NetworkError, RateLimitError } from '../api/errors.js';
import type { ErrorCode } from '../api/error-codes.js';
import { METHOD_SPECS, type ApiMethod } from '../api/methods.js';
import { redact, type Secrets } from '../api/redact.js';
import type { ResponseMap } from '../api/types.js';
import { parseRetryAfter } from './backoff.js';
import { excerpt } from './sanitize.js';
import type { TransportResponse } from './transport.js';

/**
 * When an error may be retried: `always` (429, or a request that surely did
 * not reach the server), `idempotent` (5xx, timeouts, resets: only methods
 * that may safely run twice), `never`.
 */
export type RetryRule = 'always' | 'idempotent' | 'never';

export type Outcome<M extends ApiMethod> =
  { ok: true; value: ResponseMap[M] } | { ok: false; error: MsgflowError; retry: RetryRule; retryAfterMs?: number };

type Rec = Record<string, unknown>;
const isRecord = (v: unknown): v is Rec => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Maps one answer of the service. `now` dates an HTTP-date Retry-After. */
export function interpretResponse<M extends ApiMethod>(method: M, res: TransportResponse, secrets: Secrets, now: number): Outcome<M> {
  const { statusCode: status, body } = res;

  // checkAccount reports its failures in the body, usually with HTTP 200:
  // they are never a success, whatever the status.
  if (method === 'checkAccount' && isRecord(body) && body.status === false) {
    const data = body.data;
    if (isRecord(data) && data.reason === 'rate_limit_exceeded') {
      const seconds = typeof data.retryAfter === 'number' && data.retryAfter > 0 ? data.retryAfter : 0;
      // Not retried here: the spec recommends pausing checks for 2 hours,
      // a decision for the caller, not for a backoff loop.
      const error = new RateLimitError(method, 'checkAccount', seconds * 1000, 'rate_limit_exceeded', { status });
      return { ok: false, error, retry: 'never' };
    }
    const reason = typeof body.reason === 'string' ? redact(body.reason, secrets) : 'status: false';
    return { ok: false, error: new AccountCheckError(reason, status, { code: accountCheckCode(reason) }), retry: 'never' };
  }

  if (status >= 200 && status < 300) {
    const problem = successProblem(method, body, secrets);
    if (problem === undefined) return { ok: true, value: body as ResponseMap[M] };
    const error = new MsgflowError('BAD_RESPONSE', { method, reason: problem }, { status });
    return { ok: false, error, retry: 'never' };
  }

  const message = serviceMessage(body, status, secrets);
  const retryAfterMs = parseRetryAfter(res.headers['retry-after'], now);
  if (status === 429) {
    const error = new RateLimitError(method, 'http', retryAfterMs ?? 0, message, { status });
    return { ok: false, error, retry: 'always', retryAfterMs };
  }
  const code = errorCode(method, status, message);
  const error = new ApiError(method, status, message, { code });
  if (code === 'REQUEST_CLOSED') return { ok: false, error, retry: 'idempotent', retryAfterMs };
  // A 500 about the file's size is the same for every attempt: not retried.
  const final = status < 500 || code === 'FILE_URL_TOO_LARGE';
  return final ? { ok: false, error, retry: 'never' } : { ok: false, error, retry: 'idempotent', retryAfterMs };
}

/** What the client knows when a request got no answer: whether the service ever answered it, and where it points. */
export interface NetworkContext {
  /** The service has answered at least one request of this client (any status). */
  answeredBefore: boolean;
  /** The base URL, for the message (it holds no secret: credentials and query are refused). */
  apiUrl?: string;
  /** The instance's name (config.yaml's key), for the message; never its id. */
  name?: string;
}

/**
 * Maps a request that got no answer. Connection refused before the service
 * ever answered this client means nothing listens at apiUrl (a wrong URL, a
 * service not started): said at once, naming the instance and apiUrl, since
 * retries would only take seconds to end in the same place. Once it has
 * answered, a refusal is a restart or a blip: retried like any request that
 * did not reach the server.
 */
export function interpretNetworkError(error: NetworkError, ctx: NetworkContext): Outcome<never> {
  if (error.systemCode === 'ECONNREFUSED' && !ctx.answeredBefore && ctx.apiUrl !== undefined) {
    const refused = new NetworkError(error.method, 'connection refused', false, {
      code: 'CONNECTION_REFUSED',
      systemCode: error.systemCode,
      params: { target: ctx.name ? `instance '${ctx.name}': ` : '', apiUrl: ctx.apiUrl },
      cause: error,
    });
    return { ok: false, error: refused, retry: 'never' };
  }
  return { ok: false, error, retry: error.mayHaveReachedServer ? 'idempotent' : 'always' };
}

const CONTACT_METHODS: ReadonlySet<ApiMethod> = new Set<ApiMethod>(['addContact', 'editContact', 'deleteContact']);

/**
 * The catalogue code of an error answer (not 429, handled above), from the
 * status first and, where one status has several meanings for a method, the
 * service's answer as the spec words it. This is the only place that reads
 * the service's text: everything after it decides by code (classify()).
 */
export function errorCode(method: ApiMethod, status: number, message: string): ErrorCode {
  if (status === 401) return 'UNAUTHORIZED';
  if (status === 403) return 'INSTANCE_NOT_FOUND';
  if (status === 466) return 'QUOTA_EXCEEDED';
  if (status === 499) return 'REQUEST_CLOSED';
  if (status === 500 && /^File from url exceeded max upload size/i.test(message)) return 'FILE_URL_TOO_LARGE';
  if (status >= 500) return 'SERVER_ERROR';
  if (status === 404 && CONTACT_METHODS.has(method)) return 'NOT_ON_MESSENGER';
  if (status === 400) {
    if (/^Validation failed/i.test(message)) return 'VALIDATION_FAILED';
    if (/^check phone number timeout limit exceeded/i.test(message)) return 'CHECK_PHONE_TIMEOUT';
    // The service's common 400s for an instance that cannot serve (yet).
    if (/^instance in starting process/i.test(message)) return 'INSTANCE_STARTING';
    if (/^instance (account not authorized|is starting or not authorized)/i.test(message)) return 'ACCOUNT_NOT_AUTHORIZED';
    // The spec lists a single other 400 for addContact: "Contact <chat_id> already exists".
    if (method === 'addContact') return 'CONTACT_EXISTS';
    if (method === 'getMessage' && /^chatId not found/i.test(message)) return 'CHAT_NOT_FOUND';
    if (method === 'getMessage' && /^Message not found/i.test(message)) return 'MESSAGE_NOT_FOUND';
    if (/^ID message not ?found/i.test(message)) return 'STATUS_NOT_FOUND';
    return 'VALIDATION_FAILED';
  }
  const byStatus: Partial<Record<number, ErrorCode>> = {
    404: 'PATH_NOT_FOUND',
    405: 'HTTP_METHOD_NOT_ALLOWED',
    413: 'PAYLOAD_TOO_LARGE',
    415: 'UNSUPPORTED_MEDIA_TYPE',
  };
  return byStatus[status] ?? 'API_ERROR';
}

/**
 * checkAccount's `{status:false, reason}`: a request naming both or neither of
 * phoneNumber/username (definite for this item), else the instance is
 * starting or not authorized (fatal for the instance).
 */
export function accountCheckCode(reason: string): ErrorCode {
  if (/phoneNumber|username/i.test(reason)) return 'CHECK_ACCOUNT_TARGET';
  // Starting passes by itself within seconds: retryable, unlike "not authorized".
  return /starting/i.test(reason) && !/not authorized/i.test(reason) ? 'INSTANCE_STARTING' : 'INSTANCE_NOT_READY';
}

/**
 * The error text the service gave: `message`, else `reason`, else (466) the exceeded limit's
 * `description`, else the raw text, else the status.
 */
function serviceMessage(body: unknown, status: number, secrets: Secrets): string {
  if (isRecord(body)) {
    const quota = quotaDescription(body);
    if (quota !== undefined) return redact(quota, secrets);
    // The spec's reference table spells the field `messsage`; its examples say `message`.
    for (const key of ['message', 'messsage', 'reason']) {
      if (typeof body[key] === 'string' && body[key] !== '') return redact(body[key] as string, secrets);
    }
  }
  if (typeof body === 'string' && body.trim() !== '') return excerpt(body, secrets);
  return `HTTP ${status}`;
}

/** A 466 body names the limit that is exceeded in `invokeStatus` or `correspondentsStatus` (the one whose status says EXCEEDED). */
function quotaDescription(body: Rec): string | undefined {
  for (const key of ['correspondentsStatus', 'invokeStatus']) {
    const part = body[key];
    if (isRecord(part) && /EXCEEDED/i.test(String(part.status)) && typeof part.description === 'string') return part.description;
  }
  return undefined;
}

/**
 * Methods whose answer is an object that must carry one field of a type
 * (`{addContact: true}`, `{statusInstance: "online"}`); the service's other
 * fields are kept, not checked.
 */
const ONE_FIELD: Partial<Record<ApiMethod, [field: string, type: 'string' | 'boolean' | 'number']>> = {
  deleteNotification: ['result', 'boolean'],
  addContact: ['addContact', 'boolean'],
  editContact: ['editContact', 'boolean'],
  deleteContact: ['deleteContact', 'boolean'],
  // Groups
  updateGroupName: ['updateGroupName', 'boolean'],
  updateGroupSettings: ['updateGroupSettings', 'boolean'],
  addGroupParticipant: ['addParticipant', 'boolean'],
  removeGroupParticipant: ['removeParticipant', 'boolean'],
  setGroupAdmin: ['setGroupAdmin', 'boolean'],
  removeAdmin: ['removeAdmin', 'boolean'],
  setGroupPicture: ['setGroupPicture', 'boolean'],
  // Account, queues and calls
  getStatusInstance: ['statusInstance', 'string'],
  reboot: ['isReboot', 'boolean'],
  logout: ['isLogout', 'boolean'],
  qr: ['type', 'string'],
  getAuthorizationCode: ['status', 'boolean'],
  getWaSettings: ['stateInstance', 'string'],
  getMessagesCount: ['count', 'number'],
  getWebhooksCount: ['count', 'number'],
  clearWebhooksQueue: ['isCleared', 'boolean'],
  setProfilePicture: ['setProfilePicture', 'boolean'],
};

/** Methods whose answer is an array of records, each carrying this string field. */
const LIST_OF: Partial<Record<ApiMethod, string>> = {
  getStateInstanceHistory: 'stateInstance',
  lastIncomingCalls: 'idMessage',
  lastOutgoingCalls: 'idMessage',
};

/** Methods that answer `{idMessage}` (the message or status they queued). */
const ID_ANSWER: ReadonlySet<ApiMethod> = new Set<ApiMethod>([
  'sendFileByUrl',
  'sendMessage',
  'sendLocation',
  'sendContact',
  'sendPoll',
  'sendInteractiveButtons',
  'sendInteractiveButtonsReply',
  'editMessage',
  'sendTextStatus',
  'sendVoiceStatus',
  'sendMediaStatus',
]);

/** successProblem for the group methods with an answer of their own. */
function groupAnswerProblem(method: ApiMethod, body: unknown): string | undefined {
  switch (method) {
    case 'createGroup':
      return isRecord(body) && typeof body.created === 'boolean' && typeof body.chatId === 'string'
        ? undefined
        : 'expected {created: boolean, chatId: string, groupInviteLink: string}';
    case 'getGroupData':
      return isRecord(body) && typeof body.groupId === 'string' && Array.isArray(body.participants)
        ? undefined
        : 'expected {groupId: string, participants: [...], ...}';
    case 'leaveGroup':
      return isRecord(body) && (typeof body.leaveGroup === 'boolean' || typeof body.removeAdmin === 'boolean')
        ? undefined
        : 'expected {leaveGroup: boolean} or {removeAdmin: boolean}';
    default:
      return undefined;
  }
}

/** successProblem for the status journals and the statistic. */
function statusAnswerProblem(method: ApiMethod, body: unknown): string | undefined {
  if (method === 'getStatusStatistic') {
    return Array.isArray(body) && body.every((x) => isRecord(x) && typeof x.participant === 'string' && typeof x.status === 'string')
      ? undefined
      : 'expected an array of {participant: string, status: string}';
  }
  if (!Array.isArray(body)) return 'expected an array of statuses';
  return body.every(isMessage) ? undefined : 'expected an array of statuses, got an item without idMessage';
}

/**
 * Why a 2xx body is not the success shape of `method`, or undefined when it
 * is. Checks the shape the caller's types promise, not every field: the spec
 * leaves many fields optional and a stricter check would break on additions.
 */
function successProblem(method: ApiMethod, body: unknown, secrets: Secrets): string | undefined {
  // Redacted before it is cut short, so that no part of a secret survives.
  if (typeof body === 'string') return `body is not JSON: ${excerpt(body, secrets, 60)}`;
  if (body === undefined) return METHOD_SPECS[method].emptyAnswer ? undefined : 'empty body';
  const one = ONE_FIELD[method];
  if (one) return isRecord(body) && typeof body[one[0]] === one[1] ? undefined : `expected {${one[0]}: ${one[1]}}`;
  const item = LIST_OF[method];
  if (item !== undefined) {
    if (!Array.isArray(body)) return 'expected an array';
    return body.every((r) => isRecord(r) && typeof r[item] === 'string') ? undefined : `expected an array of records with ${item}`;
  }
  if (ID_ANSWER.has(method)) return isRecord(body) && typeof body.idMessage === 'string' ? undefined : 'expected {idMessage: string}';
  switch (method) {
    case 'getChatHistory':
    case 'lastOutgoingMessages':
      if (!Array.isArray(body)) return 'expected an array of messages';
      return body.every(isMessage) ? undefined : 'expected an array of messages, got an item without idMessage';
    case 'getMessage':
      return isMessage(body) ? undefined : 'expected a message with idMessage';
    case 'checkAccount':
      return isRecord(body) && typeof body.exist === 'boolean' ? undefined : 'expected {exist: boolean, chatId: string}';
    case 'lastIncomingMessages':
      return Array.isArray(body) && body.every(isMessage) ? undefined : 'expected an array of messages';
    case 'getStateInstance':
      return isRecord(body) && typeof body.stateInstance === 'string' ? undefined : 'expected {stateInstance: string}';
    case 'checkWhatsapp':
      return isRecord(body) && typeof body.existsWhatsapp === 'boolean' ? undefined : 'expected {existsWhatsapp: boolean, chatId: string}';
    case 'receiveNotification':
      // `null`: nothing arrived within receiveTimeout.
      return body === null || (isRecord(body) && typeof body.receiptId === 'number' && isRecord(body.body))
        ? undefined
        : 'expected {receiptId, body} or null';
    case 'showMessagesQueue':
      return Array.isArray(body) ? undefined : 'expected an array of queued messages';
    // Sending
    case 'sendFileByUpload':
      return isRecord(body) && typeof body.idMessage === 'string' && typeof body.urlFile === 'string'
        ? undefined
        : 'expected {idMessage: string, urlFile: string}';
    case 'uploadFile':
      return isRecord(body) && typeof body.urlFile === 'string' ? undefined : 'expected {urlFile: string}';
    case 'forwardMessages':
      return isRecord(body) && Array.isArray(body.messages) && body.messages.every((m) => typeof m === 'string')
        ? undefined
        : 'expected {messages: string[]}';
    // Messages and chats
    case 'getContacts':
    case 'getChats':
      if (!Array.isArray(body)) return 'expected an array';
      return body.every((c) => isRecord(c) && typeof c.id === 'string') ? undefined : 'expected an array of {id: string, ...}';
    case 'getContactInfo':
      return isRecord(body) && typeof body.chatId === 'string' ? undefined : 'expected {chatId: string, ...}';
    case 'getAvatar':
      return isRecord(body) && typeof body.urlAvatar === 'string' ? undefined : 'expected {urlAvatar: string, available: boolean}';
    case 'downloadFile':
      return isRecord(body) && typeof body.downloadUrl === 'string' ? undefined : 'expected {downloadUrl: string}';
    case 'readChat':
      return isRecord(body) && typeof body.setRead === 'boolean' ? undefined : 'expected {setRead: boolean}';
    case 'setDisappearingChat':
      return isRecord(body) && typeof body.ephemeralExpiration === 'number'
        ? undefined
        : 'expected {chatId, disappearingMessagesInChat, ephemeralExpiration}';
    // Groups
    case 'createGroup':
    case 'getGroupData':
    case 'leaveGroup':
      return groupAnswerProblem(method, body);
    // Statuses
    case 'getStatusStatistic':
    case 'getIncomingStatuses':
    case 'getOutgoingStatuses':
      return statusAnswerProblem(method, body);
    default:
      return undefined;
  }
}

function isMessage(v: unknown): boolean {
  return isRecord(v) && typeof v.idMessage === 'string';
}
