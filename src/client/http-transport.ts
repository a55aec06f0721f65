/**
 * The HTTP transport: one attempt of one call, over undici. It only moves
 * bytes and says whether the server may have seen the request; retries, rate
 * limiting and the meaning of statuses belong to the client core.
 *
 * undici rather than got: measured side by side against the same `msgflow
 * serve` (bench/http-run.ts, docs/performance.md), undici's request() made
 * 2.6x the calls/s of the client's got one at a time and 2.5x at 8 in flight
 * (got with its per-call constants merged once: 1.7x below undici), and got's
 * option handling was a quarter of the run process's CPU.
 */
import { EventEmitter } from 'node:events';
import type { Dispatcher } from 'undici';
import { NetworkError } from '../api/errors.js';
import { INSTANCE_PLACEHOLDER, type Secrets } from '../api/redact.js';
import { sanitizedCause } from './sanitize.js';
import { encodeUpload, type Transport, type TransportRequest, type TransportResponse } from './transport.js';

export interface HttpTransportOptions {
  /** Base URL of the service, e.g. `https://api.example.com` (trailing slashes ignored). */
  apiUrl: string;
  idInstance: string | number;
  apiTokenInstance: string;
  /** @default 'msgflow' */
  userAgent?: string;
}

/**
 * Errors after which the request certainly did not reach the server: nothing
 * listened, or the host name did not resolve. Anything else (reset, timeout,
 * TLS failure mid-way) may have been processed, so a non-idempotent call must
 * not be repeated after it.
 */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

/** undici's codes for a timeout: connecting, waiting for the answer's headers, between body chunks. */
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * Creates the undici-based transport.
 *
 * @example
 * const transport = createHttpTransport({ apiUrl, idInstance, apiTokenInstance });
 * transport.description; // 'https://api.example.com/waInstance<INSTANCE_ID>'
 */
export function createHttpTransport(opts: HttpTransportOptions): Transport {
  const base = opts.apiUrl.replace(/\/+$/, '');
  const id = String(opts.idInstance);
  const secrets: Secrets = { idInstance: id, apiTokenInstance: opts.apiTokenInstance };
  const userAgent = opts.userAgent ?? 'msgflow';
  // Made once, not per call: undici reads request headers and never changes them.
  const jsonHeaders = Object.freeze({ accept: 'application/json', 'user-agent': userAgent, 'content-type': 'application/json' });
  const plainHeaders = Object.freeze({ accept: 'application/json', 'user-agent': userAgent });
  // The URL of each method without path parameters, built on its first call (a client calls a few methods many times).
  const urls = new Map<string, string>();
  const urlOf = (req: TransportRequest): string => {
    const params = req.pathParams ?? [];
    if (params.length > 0)
      return `${base}/waInstance${id}/${req.method}/${opts.apiTokenInstance}/${params.map(encodeURIComponent).join('/')}`;
    let url = urls.get(req.method);
    if (url === undefined) urls.set(req.method, (url = `${base}/waInstance${id}/${req.method}/${opts.apiTokenInstance}`));
    return url;
  };
  // Its own connection pool (keep-alive), so that close() frees the sockets
  // and a process using the client can exit. undici follows no redirect: a
  // redirect is not part of the API, and following it would send the token
  // in the path to wherever the Location header points.
  let pool: { request: typeof import('undici').request; dispatcher: Dispatcher } | undefined;
  const poolOf = async () => {
    if (pool) return pool;
    const undici = await loadUndici();
    return (pool ??= { request: undici.request, dispatcher: new undici.Agent() });
  };

  async function request(req: TransportRequest): Promise<TransportResponse> {
    const url = urlOf(req);
    // Loaded once; after the first call no await (a promise and a turn of the microtask queue per call).
    const { request: send, dispatcher } = pool ?? (await poolOf());
    const upload = req.upload ? await encodeUpload(req.upload) : undefined;
    const json = req.httpMethod === 'POST' && !upload;
    // One deadline for the whole attempt (connecting, the answer, its body):
    // undici's own timeouts tick in coarse steps, and bound each phase apart.
    const end = new AttemptEnd();
    const timer = setTimeout(() => end.end(), req.timeoutMs);
    const onAbort = () => end.end(req.signal?.reason);
    req.signal?.addEventListener('abort', onAbort, { once: true });
    if (req.signal?.aborted) onAbort();
    try {
      const res = await send(url, {
        dispatcher,
        method: req.httpMethod,
        headers: json ? jsonHeaders : upload ? { ...plainHeaders, ...upload.headers } : plainHeaders,
        body: json ? JSON.stringify(req.body ?? {}) : upload?.body,
        query: req.query,
        signal: end,
      });
      const text = await res.body.text();
      return { statusCode: res.statusCode, headers: singleValued(res.headers), body: parseBody(text) };
    } catch (err) {
      if (req.signal?.aborted) throw req.signal.reason;
      if (end.aborted) throw timeoutError(req, err, secrets);
      throw toNetworkError(req, err as Error & { code?: unknown }, secrets);
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
    }
  }

  return {
    request,
    // A fresh process takes a while to load undici: done before a claim that the request leaves.
    prepare: async () => void (await poolOf()),
    description: `${base}/waInstance${INSTANCE_PLACEHOLDER}`,
    async close() {
      // Destroying closes the sockets at once; its promise only settles a
      // turn later, and close() does not hold the caller (who may have
      // calls failing with CLIENT_CLOSED to collect) for that.
      pool?.dispatcher.destroy().catch(() => undefined);
    },
  };
}

/**
 * The end of one attempt: its deadline passing, or the caller's signal
 * aborting. undici takes an EventEmitter as a request's signal (its
 * documented `signal: AbortSignal | EventEmitter`), which costs a fraction
 * of an AbortController: an undici request listening on an AbortSignal goes
 * through EventTarget, measured at ~6 µs of the client's CPU per call (a
 * fifth of a call to a local service) against under 1 µs for this.
 */
class AttemptEnd extends EventEmitter {
  /** Read by undici, as on an AbortSignal. */
  aborted = false;
  /** What undici rejects with; undefined (its RequestAbortedError) for the deadline. */
  reason: unknown = undefined;

  end(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/**
 * undici, loaded with the first call (then cached by the module system): a
 * process that never calls an instance (validate, runs, the daemon between
 * schedules) starts without its module tree.
 */
const loadUndici = () => import('undici');

/**
 * The answer's headers with one value each (a repeated header's values
 * joined). undici's own object as it is when no header repeats, which is
 * every answer of the service: no copy per call.
 */
function singleValued(headers: Record<string, string | string[] | undefined>): Record<string, string | undefined> {
  for (const k in headers) {
    if (!Array.isArray(headers[k])) continue;
    const out: Record<string, string | undefined> = {};
    for (const [name, v] of Object.entries(headers)) out[name] = Array.isArray(v) ? v.join(', ') : v;
    return out;
  }
  return headers as Record<string, string | undefined>;
}

/** JSON when it parses, the text otherwise, undefined for an empty body. */
function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The attempt's deadline passed: it may have reached the server. */
function timeoutError(req: TransportRequest, err: unknown, secrets: Secrets): NetworkError {
  const cause = sanitizedCause(err instanceof Error ? err : new Error(String(err)), secrets);
  return new NetworkError(req.method, 'timeout', true, { code: 'TIMEOUT', timeoutMs: req.timeoutMs, cause });
}

function toNetworkError(req: TransportRequest, err: Error & { code?: unknown }, secrets: Secrets): NetworkError {
  const cause = sanitizedCause(err, secrets);
  const code = typeof err?.code === 'string' ? err.code : undefined;
  if (code !== undefined && (TIMEOUT_CODES.has(code) || code === 'ETIMEDOUT')) {
    return new NetworkError(req.method, 'timeout', true, { code: 'TIMEOUT', timeoutMs: req.timeoutMs, cause });
  }
  const reason = code ? `${code} (${cause.message})` : cause.message;
  return new NetworkError(req.method, reason, !(code !== undefined && NOT_SENT_CODES.has(code)), { cause, systemCode: code });
}
