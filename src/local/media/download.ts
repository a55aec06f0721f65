/**
 * Streams a link to a file on disk with got, within bounds: phase and total
 * timeouts, a byte cap that holds whatever Content-Length claims, and a
 * bounded number of redirects. Every failure is a MsgflowError that names the
 * link without its query string, fragment or credentials (they may hold
 * access tokens).
 */
import { createWriteStream } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import got, { type RequestError } from 'got';
import { MsgflowError } from '../../api/errors.js';

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
 * `https://user:pw@host/a/b.png?sig=abc#x` → `https://host/a/b.png`. Used in
 * every message about a link.
 */
export function displayUrl(url: string | URL): string {
  try {
    const u = typeof url === 'string' ? new URL(url) : url;
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '<invalid URL>';
  }
}

/**
 * Downloads `url` into `dest` (created exclusively: it must not exist).
 * On failure `dest` may be left partly written; the caller removes it.
 */
export async function downloadToFile(url: string, dest: string, opts: DownloadOptions): Promise<Downloaded> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw fail('<invalid URL>', 'not a valid URL; it should start with http(s)://');
  }
  const shown = displayUrl(parsed);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw fail(shown, `unsupported protocol ${parsed.protocol}; it should start with http(s)://`);
  }

  const phase = opts.phaseTimeoutMs ?? Math.min(opts.timeoutMs, 10_000);
  const request = got.stream(parsed, {
    followRedirect: true,
    maxRedirects: opts.maxRedirects,
    retry: { limit: 0 },
    throwHttpErrors: false,
    timeout: {
      lookup: phase,
      connect: phase,
      secureConnect: phase,
      response: phase,
      socket: phase,
      request: opts.timeoutMs,
    },
    headers: { 'user-agent': opts.userAgent ?? 'msgflow-local' },
    signal: opts.signal,
  });

  // Our own reasons to abort are kept here: got wraps whatever destroy()
  // receives, and the clear message must survive that.
  let failure: MsgflowError | undefined;
  let contentType: string | undefined;
  let finalUrl = shown;
  let redirects = 0;
  let size = 0;
  let responded = false;

  request.on('redirect', () => {
    redirects += 1;
  });
  request.on('response', (res: { statusCode: number; statusMessage?: string; headers: Record<string, string | string[] | undefined>; url: string }) => {
    responded = true;
    finalUrl = displayUrl(res.url);
    const where = finalUrl === shown ? shown : `${shown} (redirected to ${finalUrl})`;
    if (res.statusCode < 200 || res.statusCode > 299) {
      failure = new MsgflowError('FILE_FETCH_STATUS', {
        url: where,
        status: res.statusCode,
        statusText: res.statusMessage ? ` ${res.statusMessage}` : '',
      });
      request.destroy(failure);
      return;
    }
    const ct = res.headers['content-type'];
    contentType = Array.isArray(ct) ? ct[0] : ct;
    // Content-Length of an encoded body counts compressed bytes: only a
    // plain body's length tells the final size up front. The running count
    // below applies either way.
    const encoding = String(res.headers['content-encoding'] ?? 'identity').toLowerCase();
    const declared = Number(res.headers['content-length']);
    if (encoding === 'identity' && Number.isFinite(declared) && declared > opts.maxBytes) {
      failure = tooLarge(where, opts.maxBytes, `Content-Length is ${declared}`);
      request.destroy(failure);
    }
  });

  const counter = new Transform({
    transform(chunk: Buffer, _enc, callback) {
      size += chunk.length;
      if (size > opts.maxBytes) {
        failure = tooLarge(shown, opts.maxBytes, `more than ${opts.maxBytes} bytes received`);
        callback(failure);
        return;
      }
      callback(null, chunk);
    },
  });

  try {
    await pipeline(request, counter, createWriteStream(dest, { flags: 'wx' }));
  } catch (err) {
    throw failure ?? fromGotError(err as RequestError, shown, url, opts, phase, responded);
  }
  return { size, contentType, finalUrl, redirects };
}

function fail(url: string, reason: string, cause?: unknown): MsgflowError {
  return new MsgflowError('FILE_FETCH_FAILED', { url, reason }, { cause });
}

function tooLarge(url: string, limit: number, seen: string): MsgflowError {
  return new MsgflowError('FILE_TOO_LARGE', { url, limit, seen });
}

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

function fromGotError(
  err: RequestError,
  shown: string,
  raw: string,
  opts: DownloadOptions,
  phase: number,
  responded: boolean,
): MsgflowError {
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
    return new MsgflowError(
      'FILE_FETCH_TIMEOUT',
      { url: shown, timeoutMs: event === 'request' ? opts.timeoutMs : phase, phase: stuckIn },
      { cause: err },
    );
  }
  if (code === 'ERR_TOO_MANY_REDIRECTS') {
    return new MsgflowError('FILE_TOO_MANY_REDIRECTS', { url: shown, limit: opts.maxRedirects }, { cause: err });
  }
  if (opts.signal?.aborted) return fail(shown, 'aborted', err);
  // Messages of lower layers may quote the link: never let its query through.
  const message = String(err?.message ?? err).split(raw).join(shown);
  return fail(shown, (code && REASONS[code]) ?? (code ? `${code}: ${message}` : message), err);
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
