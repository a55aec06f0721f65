/**
 * The typed client, independent of how requests travel: validate before
 * anything leaves, pace, send one attempt through the Transport, map the
 * answer, retry when that is safe. The HTTP transport and the local
 * service's in-process transport share all of it.
 */
import { MsgflowError, NetworkError, ValidationError } from '../api/errors.js';
import { API_METHODS, type ApiMethod, METHOD_SPECS } from '../api/methods.js';
import { redact, redactedPath, type Secrets } from '../api/redact.js';
import type {
  CallOptions,
  InstanceApi,
  LastOutgoingMessagesRequest,
  LastOutgoingMessagesResponse,
  ResponseMap,
} from '../api/types.js';
import { validateRequest } from '../api/validate.js';
import { systemClock, type Clock } from '../util/clock.js';
import { computeBackoff } from './backoff.js';
import { createHttpTransport } from './http-transport.js';
import { type ClientOptions, parseClientOptions } from './options.js';
import { createMethodRateLimiters } from '../util/rate-limit.js';
import { interpretResponse, type Outcome, type RetryRule } from './response.js';
import { redactingLogger, sanitizedCause } from './sanitize.js';
import type { Transport, TransportRequest, TransportResponse } from './transport.js';

/**
 * One instance's API: the eight methods (each named as the API method, taking
 * the request body and resolving to the typed response), plus `close()`.
 *
 * Errors: ValidationError (nothing was sent), ApiError (4xx/5xx),
 * RateLimitError (429 after retries, or checkAccount's in-body
 * rate_limit_exceeded), AccountCheckError, NetworkError (code NETWORK_ERROR or
 * TIMEOUT), MsgflowError BAD_RESPONSE / CLIENT_CLOSED; an aborted call rejects
 * with its signal's reason.
 */
export interface MsgflowClient extends Omit<InstanceApi, 'lastOutgoingMessages'> {
  /** GET with `?minutes=` (default 1440); the request object may be left out. */
  lastOutgoingMessages(
    request?: LastOutgoingMessagesRequest,
    options?: CallOptions,
  ): Promise<LastOutgoingMessagesResponse>;
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
  const deps: AttemptDeps = { transport, clock, logger, secrets };

  async function call<M extends ApiMethod>(method: M, request: unknown, callOptions: CallOptions = {}): Promise<ResponseMap[M]> {
    try {
      return await callWithRetries(method, request, callOptions);
    } catch (err) {
      if (lifetime.signal.aborted && err === lifetime.signal.reason) throw new MsgflowError('CLIENT_CLOSED', { method });
      throw err;
    }
  }

  async function callWithRetries<M extends ApiMethod>(method: M, request: unknown, callOptions: CallOptions): Promise<ResponseMap[M]> {
    lifetime.signal.throwIfAborted();
    const link = linkSignals(callOptions.signal ? [callOptions.signal, lifetime.signal] : [lifetime.signal]);
    try {
      return await attempts<M>(method, buildRequest(method, request, callOptions, opts.timeoutMs, link.signal));
    } finally {
      link.release();
    }
  }

  async function attempts<M extends ApiMethod>(method: M, req: TransportRequest): Promise<ResponseMap[M]> {
    const signal = req.signal!;
    const spec = METHOD_SPECS[method];

    for (let attempt = 1; ; attempt++) {
      await acquire(method, signal);
      const outcome = await attemptOnce<M>(deps, req, attempt);
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
  return Object.freeze(client) as unknown as MsgflowClient;
}

interface AttemptDeps {
  transport: Transport;
  clock: Clock;
  logger: ReturnType<typeof redactingLogger>;
  secrets: Secrets;
}

/** One attempt through the transport, mapped to an Outcome (pure mapping in response.ts). */
async function attemptOnce<M extends ApiMethod>(d: AttemptDeps, req: TransportRequest, attempt: number): Promise<Outcome<M>> {
  const { transport, clock, logger, secrets } = d;
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
    return { ok: false, error, retry: error.mayHaveReachedServer ? 'idempotent' : 'always' };
  }
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
function buildRequest(method: ApiMethod, request: unknown, callOptions: CallOptions, defaultTimeoutMs: number, signal: AbortSignal): TransportRequest {
  // Strict: a typo such as `chatID` is an error here, before anything leaves.
  const parsed = validateRequest(method, request, { strict: true }) as Record<string, unknown>;
  const timeoutMs = callOptions.timeoutMs ?? defaultTimeoutMs;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new ValidationError('timeoutMs: expected a positive integer of ms', 'timeoutMs', { code: 'CLIENT_OPTIONS_INVALID' });
  }
  const spec = METHOD_SPECS[method];
  return {
    method,
    httpMethod: spec.httpMethod,
    timeoutMs,
    signal,
    ...(spec.httpMethod === 'GET' ? { query: Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)])) } : { body: parsed }),
  };
}

/**
 * A signal of its own per call, aborted with the first of `sources`: the
 * listeners that got and the clock add go on it, not on the client-wide one
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
