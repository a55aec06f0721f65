/**
 * The typed client, independent of how requests travel: validate before
 * anything leaves, pace, send one attempt through the Transport, map the
 * answer, retry when that is safe. The HTTP transport and the local
 * service's in-process transport share all of it.
 */
import { setMaxListeners } from 'node:events';
import { MsgflowError, NetworkError, ValidationError } from '../api/errors.js';
import { API_METHODS, type ApiMethod, METHOD_SPECS } from '../api/methods.js';
import { redact, redactedPath, type Secrets } from '../api/redact.js';
import type { ReceivedNotification } from '../api/notifications.js';
import type { CallOptions, InstanceApi, RequestMap, ResponseMap } from '../api/types.js';
import { validateRequest } from '../api/validate.js';
import { systemClock, type Clock } from '../util/clock.js';
import { computeBackoff } from './backoff.js';
import { createHttpTransport } from './http-transport.js';
import { type ClientOptions, parseClientOptions } from './options.js';
import { createMethodRateLimiters } from '../util/rate-limit.js';
import { interpretNetworkError, interpretResponse, type NetworkContext, type Outcome, type RetryRule } from './response.js';
import { redactingLogger, sanitizedCause } from './sanitize.js';
import type { Transport, TransportRequest, TransportResponse, UploadBody } from './transport.js';

/** Methods whose every parameter is optional: the request object may be left out. */
export type OptionalRequestMethod =
  | 'lastOutgoingMessages'
  | 'lastIncomingMessages'
  | 'getStateInstance'
  | 'getSettings'
  | 'showMessagesQueue'
  | 'clearMessagesQueue'
  | 'receiveNotification'
  // Messages and chats
  | 'getContacts'
  | 'getChats'
  // Statuses
  | 'getIncomingStatuses'
  | 'getOutgoingStatuses';

/** The methods of {@link OptionalRequestMethod}, callable without a request. */
export type OptionalRequestApi = {
  [M in OptionalRequestMethod]: (request?: RequestMap[M], options?: CallOptions) => Promise<ResponseMap[M]>;
};

/**
 * One instance's API: every method (each named as the API method, taking
 * the request body and resolving to the typed response), plus `close()`.
 * GET methods take their query parameters (`minutes`, `receiveTimeout`) in
 * the request object, deleteNotification its path parameter `receiptId`.
 *
 * Errors: ValidationError (nothing was sent), ApiError (4xx/5xx),
 * RateLimitError (429 after retries, or checkAccount's in-body
 * rate_limit_exceeded), AccountCheckError, NetworkError (code NETWORK_ERROR,
 * TIMEOUT, or CONNECTION_REFUSED when the service has never answered this
 * client: not retried), MsgflowError BAD_RESPONSE / CLIENT_CLOSED; an aborted
 * call rejects with its signal's reason.
 */
export interface NotificationsOptions {
  /** Ends the iteration: the long poll in flight is aborted and the loop ends (no error). */
  signal?: AbortSignal;
  /** Seconds each receiveNotification may wait for a notification, 5 to 60. @default 5 */
  receiveTimeout?: number;
}

export interface MsgflowClient extends Omit<InstanceApi, OptionalRequestMethod>, OptionalRequestApi {
  /**
   * The instance's notifications, oldest first, as an async iterator:
   * receives one (receiveNotification, long-polling), yields it, and deletes
   * it (deleteNotification) only when the loop asks for the next one, that is
   * after the loop body for it completed. A `break`, a `return` or an error
   * thrown in the body does NOT delete it: the same notification comes again
   * on the next iteration (at-least-once; dedupe by `receiptId` or the body's
   * `idMessage` if handling twice matters). Errors of the calls (after the
   * client's retries) end the loop by throwing.
   *
   * @example
   * for await (const { body } of client.notifications({ signal })) {
   *   if (body.typeWebhook === 'incomingMessageReceived') await handle(body);
   * }
   */
  notifications(options?: NotificationsOptions): AsyncGenerator<ReceivedNotification, void, undefined>;
  /** Where the client points, secrets redacted. */
  readonly description: string;
  /** Ends pending waits (their calls reject with CLIENT_CLOSED) and frees the HTTP sockets. */
  close(): Promise<void>;
}

/**
 * Builds a client for one instance.
 *
 * @throws ValidationError code CLIENT_OPTIONS_INVALID naming the bad option.
 * @example
 * const client = createClient({ apiUrl: 'http://127.0.0.1:7070', idInstance: 1101, apiTokenInstance: token });
 * const history = await client.getChatHistory({ chatId: '79001112233@c.us', count: 10 });
 * await client.close();
 */
export function createClient(options: ClientOptions): MsgflowClient {
  const opts = parseClientOptions(options);
  const secrets: Secrets = { idInstance: opts.idInstance, apiTokenInstance: opts.apiTokenInstance };
  const clock = opts.clock ?? systemClock;
  const logger = redactingLogger(opts.logger, secrets);
  const ownsTransport = opts.transport === undefined;
  const transport: Transport =
    opts.transport ??
    createHttpTransport({
      apiUrl: opts.apiUrl!,
      idInstance: opts.idInstance,
      apiTokenInstance: opts.apiTokenInstance,
      userAgent: opts.userAgent,
    });
  const acquire = createMethodRateLimiters(opts.rateLimits, opts.rateLimit, clock);
  // Aborted by close(): ends every pending rate-limit wait, backoff and request.
  const lifetime = new AbortController();
  const callSignal = signalSharing(lifetime.signal);
  // Set by the first answer of the service (any status): from then on a refused connection is retried.
  const deps: AttemptDeps = { transport, clock, logger, secrets, network: { answeredBefore: false, apiUrl: opts.apiUrl, name: opts.name } };

  async function call<M extends ApiMethod>(method: M, request: unknown, callOptions: CallOptions = {}): Promise<ResponseMap[M]> {
    let link: ReturnType<typeof callSignal> | undefined;
    try {
      lifetime.signal.throwIfAborted();
      link = callSignal(callOptions.signal);
      return await attempts<M>(method, buildRequest(method, request, callOptions, opts.timeoutMs, link.signal), callOptions.beforeSend);
    } catch (err) {
      if (lifetime.signal.aborted && err === lifetime.signal.reason) throw new MsgflowError('CLIENT_CLOSED', { method });
      throw err;
    } finally {
      link?.release();
    }
  }

  async function attempts<M extends ApiMethod>(method: M, req: TransportRequest, leave?: Leave): Promise<ResponseMap[M]> {
    const signal = req.signal!;
    const spec = METHOD_SPECS[method];

    for (let attempt = 1; ; attempt++) {
      const paced = acquire(method, signal);
      if (paced) await paced;
      const outcome = await attemptOnce<M>(deps, req, attempt, leave);
      if (outcome.ok) return outcome.value;
      const { error, retry, retryAfterMs } = outcome;
      if (attempt > opts.retries || !mayRetry(retry, spec.idempotent)) throw error;
      // A wait longer than the cap is the caller's to schedule (e.g. a durable
      // wait of the flow engine), not something to block a call on.
      if (retryAfterMs !== undefined && retryAfterMs > opts.retryMaxDelayMs) throw error;
      const backoff = computeBackoff(attempt, {
        baseMs: opts.retryBaseDelayMs,
        maxMs: opts.retryMaxDelayMs,
        jitter: opts.retryJitter,
      });
      const delayMs = Math.max(backoff, retryAfterMs ?? 0);
      logger?.debug(`${method}: retry ${attempt} of ${opts.retries} in ${delayMs} ms after ${error.message}`, {
        method,
        attempt,
        delayMs,
        code: error.code,
      });
      await clock.sleep(delayMs, signal);
    }
  }

  const client = {
    description: transport.description,
    async close() {
      if (lifetime.signal.aborted) return;
      lifetime.abort(new Error('client closed'));
      if (ownsTransport) await transport.close?.();
    },
  } as Record<string, unknown>;
  for (const method of API_METHODS) {
    client[method] = (request: unknown, callOptions?: CallOptions) => call(method, request, callOptions);
  }
  client.notifications = (o: NotificationsOptions = {}) =>
    notificationLoop(
      (receiveTimeout, signal) => call('receiveNotification', { receiveTimeout }, signal ? { signal } : {}),
      (receiptId) => call('deleteNotification', { receiptId }),
      o,
    );
  return Object.freeze(client) as unknown as MsgflowClient;
}

/**
 * The loop behind {@link MsgflowClient.notifications}. The delete sits after
 * the `yield`: a generator resumes there only when the consumer asks for the
 * next item; `break` and `throw` in the consumer's loop call return() instead,
 * which leaves the generator at the `yield` without running the delete.
 */
async function* notificationLoop(
  receive: (receiveTimeout: number, signal?: AbortSignal) => Promise<ReceivedNotification | null>,
  remove: (receiptId: number) => Promise<unknown>,
  o: NotificationsOptions,
): AsyncGenerator<ReceivedNotification, void, undefined> {
  const receiveTimeout = o.receiveTimeout ?? 5;
  // Checked here, not at the first receive: a wrong value is a programming error.
  validateRequest('receiveNotification', { receiveTimeout }, { strict: true });
  while (!o.signal?.aborted) {
    let n: ReceivedNotification | null;
    try {
      n = await receive(receiveTimeout, o.signal);
    } catch (e) {
      if (o.signal?.aborted) return;
      throw e;
    }
    if (!n) continue;
    yield n;
    // The consumer's body for `n` completed: now it may go. Not under the
    // caller's signal: an abort during the body still lets the finished work be acknowledged.
    await remove(n.receiptId);
  }
}

interface AttemptDeps {
  transport: Transport;
  clock: Clock;
  logger: ReturnType<typeof redactingLogger>;
  secrets: Secrets;
  /** What a failed request is judged with (response.ts); `answeredBefore` is this client's state. */
  network: NetworkContext;
}

/** What runs as a request leaves (CallOptions.beforeSend). */
type Leave = CallOptions['beforeSend'];

/**
 * One attempt through the transport, mapped to an Outcome (pure mapping in
 * response.ts). `leave` (CallOptions.beforeSend) runs first: past the rate
 * limiter, the request leaves right after it.
 */
async function attemptOnce<M extends ApiMethod>(
  d: AttemptDeps,
  req: TransportRequest,
  attempt: number,
  leave?: Leave,
): Promise<Outcome<M>> {
  const { transport, clock, logger, secrets } = d;
  if (leave) {
    await transport.prepare?.();
    await leave();
    req.signal?.throwIfAborted();
  }
  const method = req.method as M;
  const path = redactedPath(method);
  const started = clock.now();
  let res: TransportResponse;
  try {
    res = await transport.request(req);
  } catch (err) {
    if (req.signal?.aborted) throw req.signal.reason;
    const error = asNetworkError(method, err, secrets);
    logger?.debug(`${req.httpMethod} ${path} failed: ${error.message}`, {
      method,
      path,
      durationMs: clock.now() - started,
      attempt,
      code: error.code,
    });
    return interpretNetworkError(error, d.network);
  }
  d.network.answeredBefore = true;
  logger?.debug(`${req.httpMethod} ${path} ${res.statusCode}`, {
    method,
    path,
    status: res.statusCode,
    durationMs: clock.now() - started,
    attempt,
  });
  return interpretResponse(method, res, secrets, clock.now());
}

/** Validates a call and builds its transport request (nothing has left yet). */
function buildRequest(
  method: ApiMethod,
  request: unknown,
  callOptions: CallOptions,
  defaultTimeoutMs: number,
  signal: AbortSignal,
): TransportRequest {
  // Strict: a typo such as `chatID` is an error here, before anything leaves.
  const parsed = validateRequest(method, request, { strict: true }) as Record<string, unknown>;
  const timeoutMs = callOptions.timeoutMs ?? defaultTimeoutMs;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new ValidationError('timeoutMs: expected a positive integer of ms', 'timeoutMs', { code: 'CLIENT_OPTIONS_INVALID' });
  }
  const spec = METHOD_SPECS[method];
  // A shallow copy either way: what leaves is not the caller's object (nor the validator's).
  const rest = spec.pathParams ? withoutKeys(parsed, spec.pathParams) : { ...parsed };
  const req: TransportRequest = {
    method,
    httpMethod: spec.httpMethod,
    timeoutMs: longPollTimeout(spec, parsed, callOptions, timeoutMs),
    signal,
  };
  if (spec.pathParams) req.pathParams = spec.pathParams.map((k) => String(parsed[k]));
  if (spec.requestBody === 'multipart' || spec.requestBody === 'binary') req.upload = uploadOf(spec.requestBody, rest);
  else if (spec.httpMethod === 'POST') req.body = rest;
  else if (Object.keys(rest).length > 0) req.query = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, String(v)]));
  return req;
}

function withoutKeys(o: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));
}

/**
 * A validated file request as it travels: the bytes in `file`, the other
 * fields as the form's text fields (multipart) or as the headers the service
 * reads (binary: `mimeType` as Content-Type, `fileName` as GA-Filename).
 */
function uploadOf(kind: 'multipart' | 'binary', parsed: Record<string, unknown>): UploadBody {
  const { file, ...fields } = parsed as { file: Uint8Array } & Record<string, unknown>;
  const fileName = typeof fields.fileName === 'string' ? fields.fileName : undefined;
  if (kind === 'binary') {
    const contentType = typeof fields.mimeType === 'string' ? fields.mimeType : 'application/octet-stream';
    return { kind, data: file, contentType, ...(fileName === undefined ? {} : { fileName }) };
  }
  const text = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)]));
  return { kind, fields: text, file: { data: file, fileName: fileName ?? 'file' } };
}

/**
 * A long poll (receiveNotification) may be held by the service for its
 * whole `receiveTimeout`: unless the caller set a timeout for this call, the
 * attempt's timeout covers that wait plus the client's own margin.
 */
function longPollTimeout(
  spec: (typeof METHOD_SPECS)[ApiMethod],
  parsed: Record<string, unknown>,
  callOptions: CallOptions,
  timeoutMs: number,
): number {
  if (!spec.longPollSeconds || callOptions.timeoutMs !== undefined) return timeoutMs;
  const seconds = parsed[spec.longPollSeconds];
  return typeof seconds === 'number' ? Math.max(timeoutMs, seconds * 1000 + timeoutMs) : timeoutMs;
}

/**
 * The signal a call runs under, aborted by the caller's signal or the
 * client's lifetime (see {@link linkSignals}). A bulk job makes a million
 * calls under one caller signal, many at once: they share one linked signal
 * (kept between calls, released when calls come under another caller signal
 * and none is in flight on it) instead of an AbortController and two
 * listeners each. So at most one link outlives its calls.
 */
function signalSharing(lifetime: AbortSignal): (source?: AbortSignal) => { signal: AbortSignal; release: () => void } {
  let shared: { source: AbortSignal; link: ReturnType<typeof linkSignals>; calls: number } | undefined;
  return (source = lifetime) => {
    if (shared && (shared.source !== source || shared.link.signal.aborted) && shared.calls === 0) {
      shared.link.release();
      shared = undefined;
    }
    if (!shared) {
      const link = linkSignals(source === lifetime ? [lifetime] : [source, lifetime]);
      // Every call in flight listens on it (the transport's deadline, a backoff's sleep): many at once is expected.
      setMaxListeners(0, link.signal);
      shared = { source, link, calls: 0 };
    } else if (shared.source !== source) return linkSignals(source === lifetime ? [lifetime] : [source, lifetime]);
    const mine = shared;
    mine.calls++;
    return { signal: mine.link.signal, release: () => void mine.calls-- };
  };
}

/**
 * A signal of its own, aborted with the first of `sources`: the
 * listeners that the transport and the clock add go on it, not on the client-wide one
 * shared by every concurrent call. Not AbortSignal.any: on Node 20 each one
 * leaves a WeakRef behind in the long-lived client signal (a leak of one
 * object per call, a million calls in a bulk job); here `release()` removes
 * this call's listeners when it ends.
 */
function linkSignals(sources: readonly AbortSignal[]): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  const listeners: Array<[AbortSignal, () => void]> = [];
  const release = () => {
    for (const [s, l] of listeners) s.removeEventListener('abort', l);
    listeners.length = 0;
  };
  for (const s of sources) {
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    const l = () => {
      release();
      controller.abort(s.reason);
    };
    s.addEventListener('abort', l, { once: true });
    listeners.push([s, l]);
  }
  if (controller.signal.aborted) release();
  return { signal: controller.signal, release };
}

/** The NetworkError a transport failure means, secrets redacted. */
function asNetworkError(method: ApiMethod, err: unknown, secrets: Secrets): NetworkError {
  if (err instanceof NetworkError) {
    if (!leaksSecret(err, secrets)) return err;
    // A custom transport's error that carries a secret: same meaning, redacted.
    const reason = redact(String(err.params.reason ?? err.message), secrets);
    return new NetworkError(method, reason, err.mayHaveReachedServer, {
      code: err.code === 'TIMEOUT' ? 'TIMEOUT' : 'NETWORK_ERROR',
      timeoutMs: err.params.timeoutMs as number | undefined,
      cause: sanitizedCause(err.cause ?? err, secrets),
    });
  }
  // A transport must reject with NetworkError only; anything else is a
  // fault we know nothing about, so it counts as possibly processed.
  const cause = sanitizedCause(err, secrets);
  return new NetworkError(method, `${cause.name}: ${cause.message}`, true, { cause });
}

function leaksSecret(err: Error, secrets: Secrets): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const text = `${e.message}\n${e.stack ?? ''}`;
    if (redact(text, secrets) !== text) return true;
  }
  return false;
}

function mayRetry(rule: RetryRule, idempotent: boolean): boolean {
  return rule === 'always' || (rule === 'idempotent' && idempotent);
}

// Compile-time check: a MsgflowClient is an InstanceApi (actions take one).
type Assert<T extends true> = T;
type _ClientIsInstanceApi = Assert<MsgflowClient extends InstanceApi ? true : false>;
