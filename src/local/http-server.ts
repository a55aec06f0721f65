/**
 * node:http adapter of the local service. It only moves bytes: caps the body
 * (413 before reading it all), hands the request to `service.handle`, writes
 * JSON or streams a file. Every rule lives below `handle`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MsgflowError } from '../api/errors.js';
import { isApiMethod, METHOD_SPECS } from '../api/methods.js';
import type { Logger } from '../util/logger.js';
import { pipeline } from 'node:stream/promises';
import { isFileBody, JSON_HEADERS, type LocalRequest, type LocalResponse } from './types.js';
import { guardExpectContinue, readBody, refuseBody } from '../util/http-body.js';
import { answerClientErrors } from './client-errors.js';
import { privateRange } from './media/download.js';
import { BoundedMap } from '../util/bounded-map.js';

export interface HttpListener {
  /** e.g. `http://127.0.0.1:7070` */
  url: string;
  port: number;
  server: http.Server;
  close(): Promise<void>;
}

export interface ListenOptions {
  port: number;
  host: string;
  maxBodyBytes: number;
  /** The body cap of the methods that carry a file (sendFileByUpload, uploadFile). @default maxBodyBytes */
  maxUploadBytes?: number;
  logger: Logger;
  /** The service's public address (local.publicUrl): an absolute-form request target may name its host too. */
  publicUrl?: () => string;
}

interface Handler {
  handle(req: LocalRequest): Promise<LocalResponse>;
}

export async function listenHttp(service: Handler, opts: ListenOptions): Promise<HttpListener> {
  // Known once listening (port 0 picks one): until then no absolute-form target is ours.
  const bound: { addr?: AddressInfo } = {};
  const isOwn = (u: URL) => bound.addr !== undefined && ownAuthority(u, bound.addr, opts.publicUrl?.());
  const server = http.createServer();
  answerClientErrors(server);
  const resolve = targetResolver(opts, isOwn);
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => onRequest(service, opts, resolve, req, res));
  const limitOf = (req: http.IncomingMessage) => resolve(req.url ?? '/').limit;
  guardExpectContinue(server, limitOf, (req, res) => tooLarge(req, res, limitOf(req)));
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 30_000;
  server.requestTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  bound.addr = addr;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A request-target as the adapter reads it before handing the request on: its body cap, and its path and query (or why not). */
interface ReadTarget {
  limit: number;
  target: Target | string;
}

/** How many request-targets a listener keeps read. @default 256 */
const TARGET_CACHE_SIZE = 256;

/**
 * Reads request-targets, keeping the last ones read: a client sends the same
 * few targets over and over, so each is matched against the method table
 * and checked once. Only origin-form targets are kept (an absolute-form
 * one's answer depends on the listener's address), and only good ones.
 */
function targetResolver(opts: ListenOptions, isOwn: (u: URL) => boolean): (raw: string) => ReadTarget {
  const known = new BoundedMap<string, ReadTarget>(TARGET_CACHE_SIZE);
  return (raw) => {
    const hit = known.get(raw);
    if (hit !== undefined) return hit;
    const read: ReadTarget = { limit: bodyLimit(raw, opts), target: parseTarget(raw, isOwn) };
    if (raw.charCodeAt(0) === SLASH && typeof read.target !== 'string') known.set(raw, read);
    return read;
  };
}

/**
 * The body cap of a request: the upload cap for a method that carries a file
 * (read from the target's `/waInstance…/{method}/` segment before routing,
 * since the body is read first), the JSON cap for anything else.
 */
function bodyLimit(target: string, opts: ListenOptions): number {
  const method = /\/waInstance[^/?]*\/([^/?]+)\//.exec(target)?.[1];
  const upload = method !== undefined && isApiMethod(method) && METHOD_SPECS[method].requestBody;
  return upload === 'multipart' || upload === 'binary' ? (opts.maxUploadBytes ?? opts.maxBodyBytes) : opts.maxBodyBytes;
}

/**
 * Whether an absolute-form target (`GET http://host:port/path`) names this
 * listener: its port and address (any loopback name when bound to loopback or
 * to every address), or the host of the service's publicUrl. Any other host
 * is a request meant for somewhere else (a proxy request), refused.
 */
export function ownAuthority(u: URL, bound: Pick<AddressInfo, 'address' | 'port'>, publicUrl?: string): boolean {
  if (u.protocol !== 'http:') return false;
  if (publicUrl) {
    try {
      if (new URL(publicUrl).host === u.host) return true;
    } catch {
      // An unreadable publicUrl names nothing.
    }
  }
  if (Number(u.port || 80) !== bound.port) return false;
  const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === bound.address.toLowerCase()) return true;
  const boundAll = privateRange(bound.address) === 'unspecified';
  const loopback = host === 'localhost' || privateRange(host) === 'loopback';
  return loopback && (boundAll || privateRange(bound.address) === 'loopback');
}

/**
 * One request: its body read, handed to the service, the answer written. No
 * async function and no promise of its own (the body arrives by callback,
 * the answer by the one promise handle() gives): the adapter adds as little
 * as it can to what a bare node:http server spends per request.
 */
function onRequest(
  service: Handler,
  opts: ListenOptions,
  resolve: (raw: string) => ReadTarget,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): void {
  let read: ReadTarget;
  try {
    read = resolve(req.url ?? '/');
  } catch (e) {
    return failed(opts, res, e);
  }
  const { limit, target } = read;
  readBody(req, limit, (e, body) => {
    if (e !== undefined) return failed(opts, res, e);
    try {
      if (body === 'too-large') return tooLarge(req, res, limit);
      if (typeof target === 'string') {
        send(req, res, {
          status: 400,
          headers: { ...JSON_HEADERS },
          body: { message: new MsgflowError('BAD_REQUEST_TARGET', { reason: target }).message },
        });
        return;
      }
      const local = new HttpLocalRequest(req, res, target, body!);
      service.handle(local).then(
        (answer) => {
          try {
            local.answered();
            send(req, res, answer);
          } catch (e) {
            failed(opts, res, e);
          }
        },
        (e: unknown) => failed(opts, res, e),
      );
    } catch (e) {
      failed(opts, res, e);
    }
  });
}

/** A request that failed below the service (handle() never throws): a socket-level failure, such as the client going away. */
function failed(opts: ListenOptions, res: http.ServerResponse, e: unknown): void {
  opts.logger.debug('local service: request aborted', { reason: e instanceof Error ? e.message : String(e) });
  if (!res.headersSent && !res.destroyed) {
    res.writeHead(500, JSON_HEADERS).end(JSON.stringify({ message: new MsgflowError('INTERNAL', { reason: 'request failed' }).message }));
  }
}

/**
 * A request as the service sees it, read off node:http. Its `signal`
 * (aborted when the client goes away, which ends a long poll at once) is
 * made on first use: only a method that waits on the caller reads it, so
 * every other request costs no AbortController and no close listener.
 */
class HttpLocalRequest implements LocalRequest {
  readonly httpMethod: string;
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  private readonly search: string;
  private params: Record<string, string> | undefined;
  private gone: AbortController | undefined;
  private onClose: (() => void) | undefined;

  constructor(
    req: http.IncomingMessage,
    private readonly res: http.ServerResponse,
    target: Target,
    readonly body: Buffer,
  ) {
    this.httpMethod = req.method ?? 'GET';
    this.path = target.pathname;
    this.headers = req.headers;
    this.search = target.search;
  }

  /** The query's parameters (the first value of each), read on first use: only GET methods look. */
  get query(): Record<string, string> {
    if (this.params === undefined) {
      const q = (this.params = Object.create(null) as Record<string, string>);
      if (this.search !== '') for (const [k, v] of new URLSearchParams(this.search)) if (!(k in q)) q[k] = v;
    }
    return this.params;
  }

  get signal(): AbortSignal {
    if (this.gone === undefined) {
      const gone = (this.gone = new AbortController());
      this.onClose = () => {
        if (!this.res.writableFinished) gone.abort();
      };
      this.res.once('close', this.onClose);
    }
    return this.gone.signal;
  }

  /** The answer is ready: the client going away no longer concerns the request. */
  answered(): void {
    if (this.onClose) this.res.off('close', this.onClose);
  }
}

/**
 * The request-target as a path and query, or why it is not one we answer
 * (400): only origin-form (`/a/b?c`) and absolute-form naming this service
 * (`http://127.0.0.1:7070/a/b`, see ownAuthority) are accepted, with no
 * empty segment (`//`), backslash or control character. Never throws, so no
 * target can cause a 500.
 */
export function parseTarget(raw: string, isOwn: (u: URL) => boolean = () => false): Target | string {
  let t = raw;
  // Origin-form (`/…`), what every client but a proxy sends, needs no URL parse.
  if (t.charCodeAt(0) !== SLASH && /^https?:\/\//i.test(t)) {
    let u: URL;
    try {
      u = new URL(t);
    } catch {
      return 'not a valid absolute URL';
    }
    if (!isOwn(u))
      return `absolute URL for another host (${u.host.replace(/[^\x21-\x7e]/g, '?').slice(0, 64)}): this service answers for its own address only`;
    t = u.pathname + u.search;
  }
  const q = t.indexOf('?');
  const pathname = q < 0 ? t : t.slice(0, q);
  if (!pathname.startsWith('/')) return "the path must start with '/'";
  if (pathname.includes('//')) return "empty path segment ('//')";
  if (pathname.includes('\\')) return 'backslash in the path';
  if (/[\x00-\x20\x7f]/.test(pathname)) return 'control character or space in the path';
  // The query is split into parameters when a method reads it (HttpLocalRequest.query); any string is a query.
  return { pathname, search: q < 0 ? '' : t.slice(q + 1) };
}

/** A request-target read by {@link parseTarget}: the path, and the query string without its `?`. */
export interface Target {
  pathname: string;
  search: string;
}

const SLASH = 0x2f;

/** 413, then close the connection: the rest of the body is not worth reading. */
function tooLarge(req: http.IncomingMessage, res: http.ServerResponse, limit: number) {
  refuseBody(req, res, 413, JSON_HEADERS, JSON.stringify({ message: new MsgflowError('PAYLOAD_TOO_LARGE', { limit }).message }));
}

function send(req: http.IncomingMessage, res: http.ServerResponse, answer: LocalResponse) {
  // An answer with the shared JSON headers is JSON: no look into its body for a file.
  if (answer.headers !== JSON_HEADERS && isFileBody(answer.body)) {
    const stream = answer.body.stream;
    res.writeHead(answer.status, answer.headers);
    if (req.method === 'HEAD') {
      (stream as unknown as { destroy?: () => void }).destroy?.();
      res.end();
      return;
    }
    // pipeline (not pipe) destroys the file stream when the client goes away
    // mid-download, so its file handle is closed rather than left to the GC.
    pipeline(stream, res).catch(() => res.destroy());
    return;
  }
  // No body at all for a method that answers with none (sendTyping).
  const text = answer.body === undefined ? '' : JSON.stringify(answer.body);
  const length = Buffer.byteLength(text);
  // Nearly every answer has the shared JSON headers: a literal of two, no copy of them.
  const headers =
    answer.headers === JSON_HEADERS
      ? { 'content-type': JSON_HEADERS['content-type'], 'content-length': length }
      : { ...answer.headers, 'content-length': length };
  res.writeHead(answer.status, headers);
  res.end(text);
}
