/**
 * Streams a link to a file on disk with got, within bounds: phase and total
 * timeouts, a byte cap that holds whatever Content-Length claims, and a
 * bounded number of redirects. Every failure is a MsgflowError that names the
 * link without its query string, fragment or credentials (they may hold
 * access tokens).
 */
import { createWriteStream } from 'node:fs';
import { isIP } from 'node:net';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { RequestError } from 'got';
import { MsgflowError } from '../../api/errors.js';
import type { ErrorCode } from '../../api/error-codes.js';
import { guardedLookup, privateRange } from '../../util/address-range.js';
import { displayUrl } from '../../util/display-url.js';

export { displayUrl, privateRange };

export interface DownloadOptions {
  /** Cap on the bytes of the body (after decompression). */
  maxBytes: number;
  /** Cap on the whole exchange, first byte sent to last byte received, ms. */
  timeoutMs: number;
  /**
   * Cap on each phase (DNS lookup, TCP connect, TLS handshake, waiting for
   * the response head, silence between two reads), ms.
   * @default Math.min(timeoutMs, 10_000)
   */
  phaseTimeoutMs?: number;
  /** Redirects followed; one more is a failure. */
  maxRedirects: number;
  /** @default 'msgflow-local' */
  userAgent?: string;
  signal?: AbortSignal;
  /**
   * Fetch from loopback, private, link-local and other non-public addresses
   * (checked after DNS resolution, on the first URL and on every redirect).
   * @default false
   */
  allowPrivate?: boolean;
  /** URLs that are msgflow's own (its publicUrl or port): allowed whatever their address. */
  isOwn?: (url: URL) => boolean;
}

/**
 * A failed fetch. `transient` says whether the same link may work later (the
 * host refused or dropped the connection, a lookup failed temporarily, no
 * answer in time, HTTP 5xx/408/429): the send queue tries those again and
 * gives up at once on the others (404, too large, refused address...).
 */
export class FetchError extends MsgflowError {
  readonly transient: boolean;
  constructor(code: ErrorCode, params: Record<string, unknown>, transient: boolean, options: { cause?: unknown } = {}) {
    super(code, params, options);
    this.name = 'FetchError';
    this.transient = transient;
  }
}

export interface Downloaded {
  /** Bytes written. */
  size: number;
  /** Content-Type of the final response, as sent. */
  contentType?: string;
  /** The URL the bytes came from, after redirects (query string stripped). */
  finalUrl: string;
  redirects: number;
}

/**
 * Downloads `url` into `dest` (created exclusively: it must not exist).
 * On failure `dest` may be left partly written; the caller removes it.
 */
export async function downloadToFile(url: string, dest: string, opts: DownloadOptions): Promise<Downloaded> {
  const parsed = parseLink(url);
  const shown = displayUrl(parsed);
  // Our own reasons to abort are kept here: got wraps whatever destroy()
  // receives, and the clear message must survive that.
  const state: FetchState = { shown, finalUrl: shown, redirects: 0, size: 0, responded: false };
  const guard = addressGuard(opts, (f) => (state.failure = f));
  guard.checkHop(parsed);
  const phase = opts.phaseTimeoutMs ?? Math.min(opts.timeoutMs, 10_000);
  // got (and its ~20 modules) on the first download, not when the service starts: most never fetch a link.
  const { default: got } = await import('got');
  const request = got.stream(parsed, {
    dnsLookup: guard.lookup as never,
    hooks: { beforeRedirect: [(options) => guard.checkHop(options.url as URL)] },
    followRedirect: true,
    maxRedirects: opts.maxRedirects,
    retry: { limit: 0 },
    throwHttpErrors: false,
    timeout: { lookup: phase, connect: phase, secureConnect: phase, response: phase, socket: phase, request: opts.timeoutMs },
    headers: { 'user-agent': opts.userAgent ?? 'msgflow-local' },
    signal: opts.signal,
  });
  request.on('redirect', () => {
    state.redirects += 1;
  });
  request.on('response', (res: GotResponseHead) => {
    const refusal = checkResponse(res, state, opts.maxBytes);
    if (refusal) request.destroy((state.failure = refusal));
  });
  try {
    await pipeline(request, byteCounter(state, opts.maxBytes), createWriteStream(dest, { flags: 'wx' }));
  } catch (err) {
    throw state.failure ?? fromGotError(err as RequestError, shown, url, opts, phase, state.responded);
  }
  return { size: state.size, contentType: state.contentType, finalUrl: state.finalUrl, redirects: state.redirects };
}

/** What one download has seen so far. */
interface FetchState {
  shown: string;
  finalUrl: string;
  redirects: number;
  size: number;
  responded: boolean;
  contentType?: string;
  failure?: MsgflowError;
}

interface GotResponseHead {
  statusCode: number;
  statusMessage?: string;
  headers: Record<string, string | string[] | undefined>;
  url: string;
}

/** The link as a URL, or a FetchError saying why it is not an http(s) one. */
function parseLink(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw fail('<invalid URL>', 'not a valid URL; it should start with http(s)://');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw fail(displayUrl(parsed), `unsupported protocol ${parsed.protocol}; it should start with http(s)://`);
  }
  return parsed;
}

/**
 * The private-address rule (unless allowPrivate): checked on every hop's URL
 * (an address written in it is never looked up) and on every address its
 * host name resolves to. One check for both, in {@link refusalFor}.
 */
function addressGuard(opts: DownloadOptions, onRefused: (f: FetchError) => void) {
  // Whether the hop being fetched is msgflow's own address (checked per hop).
  let hopIsOwn = false;
  const guarded = () => !opts.allowPrivate && !hopIsOwn;
  const checkHop = (u: URL) => {
    hopIsOwn = opts.isOwn?.(u) ?? false;
    const host = u.hostname.replace(/^\[|\]$/g, '');
    const refused = guarded() && isIP(host) ? refusalFor(u, host) : undefined;
    if (refused) {
      onRefused(refused);
      throw refused;
    }
  };
  const lookup = guardedLookup((hostname, address) => {
    const refused = guarded() ? refusalFor(new URL(`http://${hostname}`), address, hostname) : undefined;
    if (refused) onRefused(refused);
    return refused;
  });
  return { checkHop, lookup };
}

/** The refusal for fetching `u` at `address`, or undefined when the address is public. */
function refusalFor(u: URL, address: string, host = u.hostname): FetchError | undefined {
  const range = privateRange(address);
  return range ? new FetchError('FILE_FETCH_PRIVATE', { url: displayUrl(u), host, address, range }, false) : undefined;
}

/** Records the response head; the refusal when its status or declared size rules the body out. */
function checkResponse(res: GotResponseHead, state: FetchState, maxBytes: number): FetchError | undefined {
  state.responded = true;
  state.finalUrl = displayUrl(res.url);
  const where = state.finalUrl === state.shown ? state.shown : `${state.shown} (redirected to ${state.finalUrl})`;
  if (res.statusCode < 200 || res.statusCode > 299) {
    const status = res.statusCode;
    const statusText = res.statusMessage ? ` ${res.statusMessage}` : '';
    return new FetchError('FILE_FETCH_STATUS', { url: where, status, statusText }, status >= 500 || status === 429 || status === 408);
  }
  const ct = res.headers['content-type'];
  state.contentType = Array.isArray(ct) ? ct[0] : ct;
  // Content-Length of an encoded body counts compressed bytes: only a plain
  // body's length tells the final size up front. The running count applies either way.
  const encoding = String(res.headers['content-encoding'] ?? 'identity').toLowerCase();
  const declared = Number(res.headers['content-length']);
  if (encoding === 'identity' && Number.isFinite(declared) && declared > maxBytes)
    return tooLarge(where, maxBytes, `Content-Length is ${declared}`);
  return undefined;
}

/** Counts the body's bytes, failing the pipeline past the cap. */
function byteCounter(state: FetchState, maxBytes: number): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, callback) {
      state.size += chunk.length;
      if (state.size > maxBytes) {
        state.failure = tooLarge(state.shown, maxBytes, `more than ${maxBytes} bytes received`);
        callback(state.failure);
        return;
      }
      callback(null, chunk);
    },
  });
}

function fail(url: string, reason: string, cause?: unknown, transient = false): FetchError {
  return new FetchError('FILE_FETCH_FAILED', { url, reason }, transient, { cause });
}

function tooLarge(url: string, limit: number, seen: string): FetchError {
  return new FetchError('FILE_TOO_LARGE', { url, limit, seen }, false);
}

/** Connection failures that may pass by themselves. */
const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by the server',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed (temporary)',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EPIPE: 'connection closed by the server',
  ERR_ABORTED: 'aborted',
  ABORT_ERR: 'aborted',
};

function fromGotError(err: RequestError, shown: string, raw: string, opts: DownloadOptions, phase: number, responded: boolean): FetchError {
  const code = err?.code;
  if (code === 'ETIMEDOUT') {
    const event = (err as RequestError & { event?: string }).event ?? 'request';
    // Several caps of the same length can fire together (total, silence,
    // response head): name the phase the exchange was stuck in, which is
    // what a user can act on.
    const early = event === 'lookup' || event === 'connect' || event === 'secureConnect' || event === 'send';
    const stuckIn = early
      ? (TIMEOUT_PHASES[event] ?? event)
      : responded
        ? (TIMEOUT_PHASES[event] ?? event)
        : err.timings?.connect
          ? TIMEOUT_PHASES.response!
          : TIMEOUT_PHASES.connect!;
    return new FetchError(
      'FILE_FETCH_TIMEOUT',
      { url: shown, timeoutMs: event === 'request' ? opts.timeoutMs : phase, phase: stuckIn },
      true,
      { cause: err },
    );
  }
  if (code === 'ERR_TOO_MANY_REDIRECTS') {
    return new FetchError('FILE_TOO_MANY_REDIRECTS', { url: shown, limit: opts.maxRedirects }, false, { cause: err });
  }
  if (opts.signal?.aborted) return fail(shown, 'aborted', err);
  // Messages of lower layers may quote the link: never let its query through.
  const message = String(err?.message ?? err)
    .split(raw)
    .join(shown);
  return fail(
    shown,
    (code && REASONS[code]) ?? (code ? `${code}: ${message}` : message),
    err,
    code !== undefined && TRANSIENT_CODES.has(code),
  );
}

const TIMEOUT_PHASES: Record<string, string> = {
  lookup: 'DNS lookup',
  connect: 'connecting',
  secureConnect: 'TLS handshake',
  socket: 'the connection went silent',
  send: 'sending the request',
  response: 'waiting for the response',
  request: 'whole download took too long',
};
