import { type ErrorCode, formatError, statusOf } from './error-codes.js';
import type { ApiMethod } from './methods.js';

export interface MsgflowErrorOptions {
  cause?: unknown;
  /** Overrides the catalogue's status (e.g. a remote service answering differently). */
  status?: number;
}

/**
 * Base of every error msgflow throws. `code` is stable across versions and is
 * what programs should branch on; `message` is for people.
 */
export class MsgflowError extends Error {
  readonly code: ErrorCode;
  readonly status?: number;
  readonly params: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, params: Record<string, unknown> = {}, options: MsgflowErrorOptions = {}) {
    super(formatError(code, params), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MsgflowError';
    this.code = code;
    this.params = Object.freeze({ ...params });
    this.status = options.status ?? statusOf(code);
  }

  /**
   * An error that is an answer rather than a fault (a number without an
   * account, a contact already listed): made without a stack trace. The
   * local service turns such an error into its HTTP answer and never reads
   * the stack, and capturing it cost a few µs, more than the rest of the
   * answer (contacts.import refuses tens of thousands of numbers a run).
   * Code, message, params and status as the constructor gives them.
   */
  static answer(code: ErrorCode, params: Record<string, unknown> = {}): MsgflowError {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      return new MsgflowError(code, params);
    } finally {
      Error.stackTraceLimit = limit;
    }
  }
}

/**
 * A request body, option or input that breaks a rule. Thrown by the shared
 * validators before any request leaves the client, and answered as HTTP 400
 * `{message}` by the local service.
 */
export class ValidationError extends MsgflowError {
  constructor(
    /** The text after "Details: ", e.g. `'count' must be a number`. */
    readonly details: string,
    /** The offending field, e.g. `count` or `with.phoneNumber`; undefined for the body as a whole. */
    readonly field?: string,
    options: MsgflowErrorOptions & { code?: ErrorCode } = {},
  ) {
    super(options.code ?? 'VALIDATION_FAILED', { details }, options);
    this.name = 'ValidationError';
  }
}

/**
 * The service answered with an error. `code` says what it means (CONTACT_EXISTS,
 * NOT_ON_MESSENGER, UNAUTHORIZED, SERVER_ERROR...: the client's pure mapping in
 * src/client/response.ts decides it from the status and the answer);
 * `serviceMessage` is the service's `message` (or `reason`) as sent. The text
 * is always `<method> failed with HTTP <status>: <service message>`: the
 * service's own words, whatever the code.
 */
export class ApiError extends MsgflowError {
  declare readonly status: number;

  constructor(
    readonly method: ApiMethod,
    status: number,
    /** The service's `message` (or `reason`), as sent. */
    readonly serviceMessage: string,
    options: MsgflowErrorOptions & { code?: ErrorCode } = {},
  ) {
    super(options.code ?? 'API_ERROR', { method, status, message: serviceMessage }, { ...options, status });
    this.message = formatError('API_ERROR', { method, status, message: serviceMessage });
    this.name = 'ApiError';
  }
}

/**
 * checkAccount answered `{status:false, reason}`: the instance is starting or
 * not authorized, or the request named both or neither of phoneNumber/username.
 */
export class AccountCheckError extends ApiError {
  /** @param options.code INSTANCE_NOT_READY (fatal) or CHECK_ACCOUNT_TARGET (definite). @default INSTANCE_NOT_READY */
  constructor(
    readonly reason: string,
    status = 200,
    options: MsgflowErrorOptions & { code?: ErrorCode } = {},
  ) {
    super('checkAccount', status, reason, { code: 'INSTANCE_NOT_READY', ...options });
    this.name = 'AccountCheckError';
  }
}

/**
 * Too many requests: either HTTP 429 (`scope: 'http'`) or checkAccount's
 * in-body `rate_limit_exceeded` (`scope: 'checkAccount'`, where the spec
 * recommends pausing all checks of the instance for 2 hours).
 */
export class RateLimitError extends ApiError {
  constructor(
    method: ApiMethod,
    readonly scope: 'http' | 'checkAccount',
    /** How long the service asked to wait, in milliseconds (0 when it did not say). */
    readonly retryAfterMs: number,
    serviceMessage: string,
    options: MsgflowErrorOptions & { status?: number } = {},
  ) {
    super(method, options.status ?? (scope === 'http' ? 429 : 200), serviceMessage, {
      ...options,
      code: scope === 'http' ? 'TOO_MANY_REQUESTS' : 'CHECK_ACCOUNT_RATE_LIMIT',
    });
    this.name = 'RateLimitError';
  }
}

/** The request did not get an answer: refused, reset, DNS, TLS, or a timeout. */
export class NetworkError extends MsgflowError {
  /** The operating system's code of the failure (`ECONNREFUSED`...), when the transport knows it. */
  readonly systemCode?: string;

  constructor(
    readonly method: ApiMethod,
    reason: string,
    /**
     * False only when the server certainly did not see the request (connection
     * refused, DNS failure); such a request is safe to retry for any method.
     */
    readonly mayHaveReachedServer: boolean,
    options: MsgflowErrorOptions & {
      code?: 'NETWORK_ERROR' | 'TIMEOUT' | 'CONNECTION_REFUSED';
      timeoutMs?: number;
      /** The operating system's code of the failure (`ECONNREFUSED`, `ENOTFOUND`...), when there is one. */
      systemCode?: string;
      /** More template fields (CONNECTION_REFUSED: `target`, `apiUrl`). */
      params?: Record<string, unknown>;
    } = {},
  ) {
    super(options.code ?? 'NETWORK_ERROR', { method, reason, timeoutMs: options.timeoutMs, ...options.params }, options);
    this.name = options.code === 'TIMEOUT' ? 'TimeoutError' : 'NetworkError';
    this.systemCode = options.systemCode;
  }
}

/** config.yaml is missing, malformed or breaks a rule. The message names file:line:col and key path. */
export class ConfigError extends MsgflowError {
  constructor(code: ErrorCode, params: Record<string, unknown>, options: MsgflowErrorOptions = {}) {
    super(code, params, options);
    this.name = 'ConfigError';
  }
}

/** A flow file is invalid, or a flow failed while running. */
export class FlowError extends MsgflowError {
  constructor(code: ErrorCode, params: Record<string, unknown>, options: MsgflowErrorOptions = {}) {
    super(code, params, options);
    this.name = 'FlowError';
  }
}

/**
 * Several errors found at once (every problem of a config file): one error of
 * the first one's type and code whose message has a line each; a single error
 * is returned as it is.
 */
export function combineErrors<E extends MsgflowError>(errors: readonly E[], make: (first: E) => E): E {
  if (errors.length === 1) return errors[0]!;
  const combined = make(errors[0]!);
  combined.message = errors.map((e) => e.message).join('\n');
  return combined;
}

export function isMsgflowError(e: unknown): e is MsgflowError {
  return e instanceof MsgflowError;
}
