/**
 * The local service: msgflow's own implementation of the instance API.
 * `handle` is the whole service (auth, routing, method check, JSON parsing,
 * validation, rate limits, domain); HTTP and in-process callers are thin
 * adapters around it.
 *
 * @example
 * const service = createLocalService(config.local!, { baseDir: config.baseDir });
 * await service.start();
 * const { url, close } = await service.listen(7070, '127.0.0.1');
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { EventEmitter } from 'eventemitter3';
import { MsgflowError, ValidationError } from '../api/errors.js';
import { MAX_JSON_DEPTH, nestedDeeperThan, tooDeepReason } from '../util/http-body.js';
import { isApiMethod, METHOD_SPECS, type ApiMethod } from '../api/methods.js';
import { redact } from '../api/redact.js';
import { validateRequest } from '../api/validate.js';
import type { LocalConfig } from './config.js';
import type { Logger } from '../util/logger.js';
import { systemClock, type Clock } from '../util/clock.js';
import { BoundedMap } from '../util/bounded-map.js';
import { handleAdmin } from './admin.js';
import { listenHttp, type HttpListener } from './http-server.js';
import { LocalInstance } from './instance/instance.js';
import type { MethodResult } from './instance/dispatch.js';
import { createMediaStore } from './media/file-store.js';
import { privateRange } from './media/download.js';
import type { MediaStore } from './media/types.js';
import { Network } from './network.js';
import { loadSeedFile } from './seed.js';
import { readUploadBody } from './upload-body.js';
import { errorResponse, json, validationResponse, type LocalFileBody, type LocalRequest, type LocalResponse } from './types.js';
import { openStatic } from './static-files.js';

export interface LocalServiceOptions {
  /** Directory relative paths of the config (dataDir, seed files) resolve against: the config file's. */
  baseDir: string;
  /** @default systemClock */
  clock?: Clock;
  /** @default silent */
  logger?: Logger;
  /** Base URL used in downloadUrl. @default local.publicUrl, else the address listen() bound, else http://host:port */
  publicUrl?: string;
  /** Replaces the media store (fetching and keeping files); the service closes it with itself. @default createMediaStore over dataDir/files */
  mediaStore?: MediaStore;
  /** How often expired files are purged, ms. @default 3600000 */
  purgeIntervalMs?: number;
}

export interface LocalServiceEvents {
  /** A queued message left the send queue; `releasedAt - dueAt` is the scheduling jitter. */
  'queue:released': [{ idInstance: string; idMessage: string; dueAt: number; releasedAt: number }];
  /** A queued message is now in the history. */
  'queue:sent': [{ idInstance: string; idMessage: string; chatId: string }];
  /** A queued message could not be sent (its file could not be fetched); it is not in the history. */
  'queue:failed': [{ idInstance: string; idMessage: string; reason: string }];
}

export interface LocalService {
  readonly config: LocalConfig;
  readonly events: EventEmitter<LocalServiceEvents>;
  /** Absolute data directory. */
  readonly dataDir: string;
  /** Base URL of downloadUrl links. */
  readonly publicUrl: string;
  /** Opens every instance's stores, seeds empty ones, starts send queues and file purging. */
  start(): Promise<void>;
  /** Stops queues and timers and closes listeners. Acknowledged work stays on disk. */
  close(): Promise<void>;
  /** Answers one request. Never throws; never answers 500 for bad input. */
  handle(req: LocalRequest): Promise<LocalResponse>;
  /** Serves `handle` over node:http. Port 0 picks a free port. */
  listen(port?: number, host?: string): Promise<HttpListener>;
  /** Deletes expired files now; returns how many. */
  purgeFiles(): Promise<number>;
}

/** Room for a multipart envelope around the largest file (boundaries, part headers, text fields). */
const UPLOAD_ENVELOPE_BYTES = 64 * 1024;

/** The path values of a method with none (all but a few): one frozen object rather than one per request. */
const NO_PATH_VALUES: Readonly<Record<string, string | undefined>> = Object.freeze({});

const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

export function createLocalService(config: LocalConfig, opts: LocalServiceOptions): LocalService {
  const ctx = createContext(config, opts);
  const service: LocalService = {
    config,
    events: ctx.events,
    dataDir: ctx.dataDir,
    get publicUrl() {
      return ctx.publicUrl();
    },
    start: () => startService(ctx),
    close: () => closeService(ctx),
    handle: (req) => handleRequest(ctx, req),
    listen: (port = config.port, host = config.host) => listenService(ctx, service, port, host),
    purgeFiles: () => purgeFiles(ctx),
  };
  return service;
}

/** What the service's functions share. */
interface ServiceContext {
  readonly config: LocalConfig;
  readonly opts: LocalServiceOptions;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly dataDir: string;
  readonly staticRoot: string | undefined;
  readonly network: Network;
  readonly events: EventEmitter<LocalServiceEvents>;
  readonly instances: Map<string, LocalInstance>;
  readonly listeners: Set<HttpListener>;
  /** Routes of the paths seen last, by path (bounded: ROUTE_CACHE_SIZE). */
  readonly routes: BoundedMap<string, KnownRoute>;
  readonly media: MediaStore;
  /** The address the first listen() bound: the default publicUrl. */
  readonly bound: { url?: string };
  purgeTimer: NodeJS.Timeout | undefined;
  publicUrl(): string;
  /** A text with every instance id and token replaced by placeholders. */
  hide(text: string): string;
}

function createContext(config: LocalConfig, opts: LocalServiceOptions): ServiceContext {
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? silentLogger;
  const dataDir = path.resolve(opts.baseDir, config.dataDir);
  const secrets = config.instances.map((i) => ({ idInstance: i.idInstance, apiTokenInstance: i.apiTokenInstance }));
  const bound: { url?: string } = {};
  const publicUrl = () => (opts.publicUrl ?? config.publicUrl ?? bound.url ?? `http://${config.host}:${config.port}`).replace(/\/+$/, '');
  const media =
    opts.mediaStore ??
    createMediaStore({
      dir: path.join(dataDir, 'files'),
      clock,
      maxBytes: config.maxFileBytes,
      timeoutMs: config.fetchTimeoutMs,
      maxRedirects: config.maxRedirects,
      retentionMs: config.fileRetentionMs,
      logger,
      allowPrivate: config.fetch.allowPrivate,
      isOwn: (u) => isOwnUrl(u, publicUrl()),
    });
  return {
    config,
    opts,
    clock,
    logger,
    dataDir,
    staticRoot: config.staticDir ? path.resolve(opts.baseDir, config.staticDir) : undefined,
    network: new Network(config.network),
    events: new EventEmitter<LocalServiceEvents>(),
    instances: new Map(),
    listeners: new Set(),
    routes: new BoundedMap(ROUTE_CACHE_SIZE),
    bound,
    purgeTimer: undefined,
    media,
    publicUrl,
    hide: (text) => secrets.reduce((t, s) => redact(t, s), text),
  };
}

async function purgeFiles(ctx: ServiceContext): Promise<number> {
  try {
    return await ctx.media.purgeExpired();
  } catch (e) {
    ctx.logger.warn('local service: purging expired files failed', { reason: ctx.hide(String(e)) });
    return 0;
  }
}

async function startService(ctx: ServiceContext): Promise<void> {
  const { config, opts, dataDir, events } = ctx;
  await mkdir(dataDir, { recursive: true });
  for (const ic of config.instances) {
    const seedFile = ic.seed ? path.resolve(opts.baseDir, ic.seed) : undefined;
    const deps = {
      dataDir,
      network: ctx.network,
      clock: ctx.clock,
      media: ctx.media,
      logger: ctx.logger,
      publicUrl: ctx.publicUrl,
      maxFileBytes: config.maxFileBytes,
      webhook: config.webhook,
    };
    const inst = await LocalInstance.open(ic, deps, seedFile ? () => loadSeedFile(seedFile, ic.seed) : undefined);
    const id = ic.idInstance;
    inst.sendQueue.on('released', (e) => events.emit('queue:released', { idInstance: id, ...e }));
    inst.sendQueue.on('sent', (e) => events.emit('queue:sent', { idInstance: id, ...e }));
    inst.sendQueue.on('failed', (e) => events.emit('queue:failed', { idInstance: id, idMessage: e.idMessage, reason: e.reason }));
    ctx.instances.set(id, inst);
  }
  await purgeFiles(ctx);
  ctx.purgeTimer = setInterval(() => void purgeFiles(ctx), opts.purgeIntervalMs ?? 3_600_000);
  ctx.purgeTimer.unref();
}

async function closeService(ctx: ServiceContext): Promise<void> {
  if (ctx.purgeTimer) clearInterval(ctx.purgeTimer);
  await Promise.all([...ctx.listeners].map((l) => l.close()));
  await Promise.all([...ctx.instances.values()].map((i) => i.close()));
  await ctx.media.close();
}

/** How many request paths a service keeps the route of. @default 256 */
const ROUTE_CACHE_SIZE = 256;

/**
 * Where a path that named an API method of an instance with the right token
 * goes. A client sends the same few paths over and over (its instance, its
 * token, a handful of methods), so each is split and looked up once.
 */
interface KnownRoute {
  readonly instance: LocalInstance;
  readonly method: ApiMethod;
  readonly pathValues: Readonly<Record<string, string | undefined>>;
}

/**
 * Routing and auth. Not async: it hands on callMethod's promise as it is (an
 * async function would wrap it in one more, two more turns of the microtask
 * queue per request); what it throws, handleRequest catches like a rejection.
 */
function route(ctx: ServiceContext, req: LocalRequest): LocalResponse | Promise<LocalResponse> {
  // Only a path whose token was accepted is kept, and the token is part of the path: a path found is one
  // accepted before (tokens do not change while the service runs). Any other path is checked in full.
  const known = ctx.routes.get(req.path);
  if (known !== undefined) return callMethod(known.instance, known.method, req, known.pathValues);
  const parts = splitPath(req.path);
  if (!parts) return errorResponse(new MsgflowError('PATH_NOT_FOUND'));
  if (parts[0] === 'files' && parts.length === 3) return serveFile(ctx, req, parts[1]!);
  if (parts[0] === '_local' && parts[1] === 'static') return serveStatic(ctx, req, parts.slice(2));
  const admin = parts[0] === '_local';
  const seg = admin ? parts.slice(1) : parts;
  if (seg.length < 3 || !seg[0]!.startsWith('waInstance')) return errorResponse(new MsgflowError('PATH_NOT_FOUND'));
  const [head, method, token, ...extra] = seg as [string, string, string, ...string[]];
  const pathParams = (!admin && isApiMethod(method) && METHOD_SPECS[method].pathParams) || [];
  if (extra.length !== pathParams.length) return errorResponse(new MsgflowError('PATH_NOT_FOUND'));
  const instance = ctx.instances.get(head.slice('waInstance'.length));
  if (!instance) return errorResponse(new MsgflowError('INSTANCE_NOT_FOUND'));
  if (!instance.acceptsToken(token)) return errorResponse(new MsgflowError('UNAUTHORIZED'));
  if (admin) return handleAdmin(instance, method, req, () => readJsonBody(req));
  if (!isApiMethod(method)) return errorResponse(new MsgflowError('METHOD_NOT_FOUND', { method: printable(method) }));
  const pathValues = pathParams.length === 0 ? NO_PATH_VALUES : Object.freeze(Object.fromEntries(pathParams.map((k, i) => [k, extra[i]])));
  ctx.routes.set(req.path, { instance, method, pathValues });
  return callMethod(instance, method, req, pathValues);
}

/**
 * An API call past routing and auth: HTTP method, rate limit, body,
 * validation, the instance. Not async, like route(): a JSON call goes
 * straight to the instance's promise; only an upload waits for its body.
 */
function callMethod(
  instance: LocalInstance,
  method: ApiMethod,
  req: LocalRequest,
  pathValues: Readonly<Record<string, string | undefined>>,
): LocalResponse | Promise<LocalResponse> {
  const spec = METHOD_SPECS[method];
  const expected = spec.httpMethod;
  const got = req.httpMethod.toUpperCase();
  if (got !== expected) {
    return errorResponse(new MsgflowError('HTTP_METHOD_NOT_ALLOWED', { method, expected, got: printable(got) }), { allow: expected });
  }
  const rate = instance.limiter.take(method);
  if (!rate.ok) {
    const e = new MsgflowError('TOO_MANY_REQUESTS', { method, limit: rate.limit, retryAfter: rate.retryAfterSeconds });
    return errorResponse(e, { 'retry-after': String(rate.retryAfterSeconds) });
  }
  // POST carries a JSON body (or a file: sendFileByUpload, uploadFile); GET its parameters in the query; DELETE in the path.
  const upload = spec.requestBody;
  if (upload === 'multipart' || upload === 'binary') return readUploadBody(req, upload).then((body) => invoke(instance, method, req, body));
  return invoke(instance, method, req, expected !== 'POST' ? { ...queryBody(req.query), ...queryBody(pathValues) } : readJsonBody(req));
}

/** A call's body validated and handed to the instance; its answer as JSON. */
function invoke(instance: LocalInstance, method: ApiMethod, req: LocalRequest, body: unknown): Promise<LocalResponse> {
  const parsed = validateRequest(method, body);
  // Only a long poll waits on the caller; reading req.signal makes the HTTP
  // adapter's AbortController, so no other method asks for it.
  const signal = METHOD_SPECS[method].longPollSeconds === undefined ? undefined : req.signal;
  return instance.call(method, parsed, signal).then(asJson);
}

const asJson = (result: MethodResult): LocalResponse => json(result.status, result.body);

async function serveFile(ctx: ServiceContext, req: LocalRequest, id: string): Promise<LocalResponse> {
  const got = req.httpMethod.toUpperCase();
  if (got !== 'GET' && got !== 'HEAD') {
    return errorResponse(new MsgflowError('HTTP_METHOD_NOT_ALLOWED', { method: 'files', expected: 'GET', got: printable(got) }), {
      allow: 'GET, HEAD',
    });
  }
  const file = await ctx.media.open(id);
  if (!file) return errorResponse(new MsgflowError('FILE_NOT_FOUND'));
  const body: LocalFileBody = { kind: 'file', ...file };
  return {
    status: 200,
    headers: {
      'content-type': file.mimeType,
      'content-length': String(file.size),
      'content-disposition': `inline; filename*=UTF-8''${encodeURIComponent(file.fileName)}`,
      'cache-control': 'private, max-age=0',
    },
    body,
  };
}

async function serveStatic(ctx: ServiceContext, req: LocalRequest, segments: string[]): Promise<LocalResponse> {
  const got = req.httpMethod.toUpperCase();
  if (got !== 'GET' && got !== 'HEAD') {
    return errorResponse(new MsgflowError('HTTP_METHOD_NOT_ALLOWED', { method: 'static', expected: 'GET', got: printable(got) }), {
      allow: 'GET, HEAD',
    });
  }
  const found = ctx.staticRoot ? await openStatic(ctx.staticRoot, segments) : undefined;
  return found ?? errorResponse(new MsgflowError('FILE_NOT_FOUND'));
}

/**
 * route() with every failure turned into an answer. Not async: an answer
 * route() has at once, or its promise, goes back as it is (one promise less
 * per request than an async wrapper awaiting it).
 */
function handleRequest(ctx: ServiceContext, req: LocalRequest): Promise<LocalResponse> {
  try {
    const answer = route(ctx, req);
    return answer instanceof Promise ? answer.catch((e: unknown) => failureResponse(ctx, e)) : Promise.resolve(answer);
  } catch (e) {
    return Promise.resolve(failureResponse(ctx, e));
  }
}

/** What a request that failed is answered: its error when it is the caller's, else 500 (logged, secrets hidden). */
function failureResponse(ctx: ServiceContext, e: unknown): LocalResponse {
  if (e instanceof ValidationError) return validationResponse(e);
  if (e instanceof MsgflowError && e.status !== undefined && e.status < 500) return errorResponse(e);
  ctx.logger.error('local service: unexpected error', { reason: ctx.hide(e instanceof Error ? e.message : String(e)) });
  return json(500, { message: new MsgflowError('INTERNAL', { reason: 'unexpected error, see the service log' }).message });
}

async function listenService(ctx: ServiceContext, service: LocalService, port: number, host: string): Promise<HttpListener> {
  const l = await listenHttp(service, {
    port,
    host,
    maxBodyBytes: ctx.config.maxBodyBytes,
    // A file sent with the request may be as large as a fetched one, plus its multipart envelope.
    maxUploadBytes: ctx.config.maxFileBytes + UPLOAD_ENVELOPE_BYTES,
    logger: ctx.logger,
    publicUrl: ctx.publicUrl,
  });
  ctx.bound.url ??= l.url;
  ctx.listeners.add(l);
  const closeOne = l.close;
  return {
    ...l,
    close: async () => {
      ctx.listeners.delete(l);
      await closeOne();
    },
  };
}

/** Path segments, URL-decoded; undefined when a segment is not valid percent-encoding. */
function splitPath(p: string): string[] | undefined {
  // One empty segment is dropped at each end (the leading '/', a trailing one); any other stays, so '//' is still told apart.
  const parts = p.split('/');
  if (parts[0] === '') parts.shift();
  if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  // Nearly every path has nothing encoded: no decoding pass then.
  if (!p.includes('%')) return parts;
  try {
    return parts.map((s) => decodeURIComponent(s));
  } catch {
    return undefined;
  }
}

function header(req: LocalRequest, name: string): string | undefined {
  const v = req.headers?.[name];
  return Array.isArray(v) ? v[0] : v;
}

function bodyText(req: LocalRequest): string {
  if (req.body === undefined) return '';
  return typeof req.body === 'string' ? req.body : req.body.toString('utf8');
}

/**
 * The JSON body of a POST. An empty body is `undefined` (the validator then
 * says the body must be an object); a non-empty one must be declared
 * application/json and parse.
 *
 * @throws MsgflowError UNSUPPORTED_MEDIA_TYPE (415), MALFORMED_JSON (400) or BODY_TOO_DEEP (400)
 */
function readJsonBody(req: LocalRequest): unknown {
  if (req.json !== undefined) return parsedJsonBody(req, req.json);
  const text = bodyText(req);
  if (text.trim() === '') return undefined;
  const ct = header(req, 'content-type') ?? '';
  if (!isJsonMediaType(ct)) throw new MsgflowError('UNSUPPORTED_MEDIA_TYPE', { got: ct.slice(0, 100) || '(none)' });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    // The parser's message can quote the input; keep only its kind, never the body.
    const reason =
      e instanceof SyntaxError
        ? e.message
            .replace(/".*$/s, '')
            .replace(/,?\s*$/, '')
            .slice(0, 120)
        : 'unreadable';
    throw new MsgflowError('MALFORMED_JSON', { reason });
  }
  // Each level takes two characters at least (`[` and `]`), so a short text cannot be too deep: no walk over it.
  if (text.length > 2 * MAX_JSON_DEPTH && nestedDeeperThan(value)) throw new MsgflowError('BODY_TOO_DEEP', { reason: tooDeepReason() });
  return value;
}

/** A body handed over parsed (LocalRequest.json): the checks readJsonBody makes after parsing text. */
function parsedJsonBody(req: LocalRequest, value: unknown): unknown {
  const ct = header(req, 'content-type') ?? '';
  if (!isJsonMediaType(ct)) throw new MsgflowError('UNSUPPORTED_MEDIA_TYPE', { got: ct.slice(0, 100) || '(none)' });
  if (nestedDeeperThan(value)) throw new MsgflowError('BODY_TOO_DEEP', { reason: tooDeepReason() });
  return value;
}

/** Whether a Content-Type names JSON (application/json, or a +json type), parameters and case aside. */
function isJsonMediaType(ct: string): boolean {
  // What nearly every client sends, told without a split and a regex.
  if (ct === 'application/json' || ct === 'application/json; charset=utf-8') return true;
  const mediaType = ct.split(';')[0]!.trim().toLowerCase();
  return mediaType === 'application/json' || /^application\/[\w.+-]+\+json$/.test(mediaType);
}

/** GET carries its parameters in the query; digits become numbers so the shared validator applies. */
function queryBody(query: LocalRequest['query']): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query ?? {})) {
    // `?minutes=` (empty) means "not given": the default applies.
    if (v === undefined || v === '') continue;
    // Numbers in the query reach the shared validator as numbers, so
    // `minutes=1.5` is told "must be an integer" as a JSON 1.5 would be.
    out[k] = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(v) ? Number(v) : v;
  }
  return out;
}

/**
 * Whether a urlFile points at this service itself (its publicUrl, or a
 * loopback address on its port): the demo brochure under /_local/static/ is
 * fetched this way, and it stays allowed when private addresses are not.
 */
function isOwnUrl(u: URL, publicUrl: string): boolean {
  let own: URL;
  try {
    own = new URL(publicUrl);
  } catch {
    return false;
  }
  if (u.origin === own.origin) return true;
  const loopback = (h: string) => h === 'localhost' || privateRange(h) === 'loopback' || privateRange(h) === 'unspecified';
  return u.protocol === own.protocol && u.port === own.port && loopback(u.hostname) && loopback(own.hostname);
}

/** User input put in an error message: short, printable. */
function printable(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, '?').slice(0, 64);
}
