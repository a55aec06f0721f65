/**
 * The dashboard server: static pages, the JSON API, server-sent events,
 * /healthz and /metrics, on node:http (a handful of routes need no
 * framework). `msgflow start` serves it beside the flows it runs;
 * `msgflow ui` serves it alone over the same store.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MsgflowError } from '../api/errors.js';
import type { Runtime } from '../runtime/runtime.js';
import { portInUseError } from '../util/port-in-use.js';
import type { Logger } from '../util/logger.js';
import type { ApiContext } from './api.js';
import { listPauses } from '../engine/run/pauses.js';
import { createEventHub, type EventHub } from './events.js';
import { createFollowHub, type FollowHub } from './follow.js';
import { SseStreams, type SseLimits } from './sse.js';
import { createUiMetrics, type UiMetrics } from './metrics.js';
import { createRunIndex, type RunIndex } from './run-index.js';
import { checkBind, crossSiteReason, hasToken, hostHeaderAllowed, isLoopbackHost } from './safety.js';
import { createReachability } from './health.js';
import { createInstanceProbe, type InstanceProbe } from './instances.js';
import { MAX_BODY, refuseLargeBody, SECURITY_HEADERS, sendJson } from './http.js';
import { guardExpectContinue } from '../util/http-body.js';
import { buildRoutes, type Route } from './routes.js';

export interface UiServerOptions {
  runtime: Runtime;
  /** @default 127.0.0.1 */
  host?: string;
  /** 0 picks a free port. @default 7071 */
  port?: number;
  /** Bearer token for state-changing requests; '' for none (loopback only). @default '' */
  token?: string;
  logger?: Logger;
  /** Step progress events at most this often per step. @default 250 */
  throttleMs?: number;
  /** Store poll for other processes' runs while a page listens. @default 1000 */
  pollMs?: number;
  /** Limits of the event streams (`GET /api/events`): per client address, in all, and what a stream may hold unsent (see sse.ts). */
  streams?: SseLimits;
  /**
   * Whether /healthz and the Instances page may open the local service to ask a local instance
   * (`runtime.local()`). `msgflow ui` says no: opening it would take the
   * local data lock, and a `msgflow start` after it would be refused. @default true
   */
  probeLocal?: boolean;
  /** Full reload of the run history at most this often (see RunIndexOptions). @default 60000 */
  reloadMs?: number;
  /** Read of the newest runs (other processes' new runs) at most this often. @default 1000 */
  recentMs?: number;
}

export interface UiServer {
  /** `http://127.0.0.1:7071` (the address to open). */
  readonly url: string;
  readonly port: number;
  readonly host: string;
  readonly index: RunIndex;
  readonly events: EventHub;
  /** The followers of `GET /api/events?flow=NAME`. */
  readonly follow: FollowHub;
  /** Every open event stream (both kinds), with what each holds in the server. */
  readonly streams: SseStreams;
  readonly metrics: UiMetrics;
  close(): Promise<void>;
}

/** Where the hand-written page assets are, from src/ (tsx, tests) or dist/ (the built package). */
export function assetsDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, 'assets'), path.resolve(here, '../../src/ui/assets')];
  const found = candidates.find((d) => existsSync(path.join(d, 'index.html')));
  if (!found) throw new MsgflowError('INTERNAL', { reason: `dashboard assets not found (looked in ${candidates.join(', ')})` });
  return found;
}

interface Asset {
  body: Buffer;
  type: string;
}

function loadAssets(): Map<string, Asset> {
  const dir = assetsDir();
  const uplotDir = path.dirname(createRequire(import.meta.url).resolve('uplot'));
  const files: Array<[string, string, string]> = [
    ['/', path.join(dir, 'index.html'), 'text/html; charset=utf-8'],
    ['/assets/app.js', path.join(dir, 'app.js'), 'text/javascript; charset=utf-8'],
    ['/assets/app.css', path.join(dir, 'app.css'), 'text/css; charset=utf-8'],
    // The page links the SVG; /favicon.ico is where browsers and tools look without a link.
    ['/favicon.svg', path.join(dir, 'favicon.svg'), 'image/svg+xml'],
    ['/favicon.ico', path.join(dir, 'favicon.ico'), 'image/x-icon'],
    // uPlot from node_modules: bundled with the package, never a CDN.
    ['/assets/uplot.js', path.join(uplotDir, 'uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
    ['/assets/uplot.css', path.join(uplotDir, 'uPlot.min.css'), 'text/css; charset=utf-8'],
  ];
  return new Map(files.map(([route, file, type]) => [route, { body: readFileSync(file), type }]));
}

export async function createUiServer(opts: UiServerOptions): Promise<UiServer> {
  const { runtime } = opts;
  const host = opts.host ?? '127.0.0.1';
  const token = opts.token ?? '';
  checkBind(host, token);
  // The token is a secret like an instance token: scrubbed from anything this process prints or answers.
  if (token) runtime.redactor.add({ apiTokenInstance: token });
  const { scrub } = runtime.redactor;

  const assets = loadAssets();
  const now = () => runtime.clock.now();
  const index = createRunIndex({ store: runtime.store, engine: runtime.engine, reloadMs: opts.reloadMs, recentMs: opts.recentMs });
  const streams = new SseStreams(opts.streams);
  const events = createEventHub({ bus: runtime.bus, index, throttleMs: opts.throttleMs, pollMs: opts.pollMs, streams, scrub });
  const follow = createFollowHub(runtime.bus, streams, scrub);
  const instances = createInstanceProbe(runtime, { probeLocal: opts.probeLocal });
  const metrics = createUiMetrics({
    bus: runtime.bus,
    runs: () => index.all(),
    pauses: () => listPauses(runtime.store),
    now,
    sendQueues: () => sendQueues(runtime, instances),
  });
  const ctx: ApiContext = { runtime, index, now, detailCache: new Map(), instances };
  // Read the history now, in the background: the first page opened does not wait for it (about 2 s at 10,000 runs).
  void index.all().catch(() => {});
  const routes = buildRoutes({ ctx, index, events, follow, metrics, reachability: createReachability(runtime, opts.probeLocal ?? true) });
  const dispatch: Dispatch = { host, token, assets, routes };

  const server: Server = createServer((req, res) => {
    handle(dispatch, req, res).catch((e) => answerError(req, res, e, opts.logger, scrub));
  });
  // A body announced over 1 MiB is refused before the client sends it.
  guardExpectContinue(server, MAX_BODY, refuseLargeBody);
  // SSE streams stay open: keep-alive timeouts must not cut them.
  server.requestTimeout = 0;
  server.headersTimeout = 30_000;
  const port = await listen(server, host, opts.port ?? 7071);
  const shownHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${shownHost}:${port}`,
    port,
    host,
    index,
    events,
    follow,
    streams,
    metrics,
    async close() {
      events.close();
      follow.close();
      streams.close();
      metrics.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** Each instance's send-queue length for /metrics, from the probe's cache (an instance not asked or unreachable has none). */
async function sendQueues(runtime: Runtime, probe: InstanceProbe): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const name of Object.keys(runtime.config.instances)) {
    const live = await probe.live(name).catch(() => undefined);
    if (live?.queue) out[name] = live.queue.length;
  }
  return out;
}

/** Listens on host:port (0 picks a free port); resolves the port bound. */
async function listen(server: Server, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      reject(portInUseError(e, { port, key: 'ui.port in config.yaml (or --port)' }) ?? e);
    });
    server.listen(port, host, () => resolve());
  });
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : port;
}

interface Dispatch {
  host: string;
  token: string;
  assets: Map<string, Asset>;
  routes: Route[];
}

/** Serves an asset or the first route whose path matches; state-changing routes pass the safety checks first. */
async function handle(d: Dispatch, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
  if (!hostHeaderAllowed(req, d.host)) {
    throw new MsgflowError('UI_FORBIDDEN', { reason: `Host '${req.headers.host}' is not this dashboard's address` });
  }
  if (req.method === 'GET' || req.method === 'HEAD') {
    const asset = d.assets.get(url.pathname === '/index.html' ? '/' : url.pathname);
    if (asset) {
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': asset.type,
        'content-length': String(asset.body.length),
        'cache-control': 'no-cache',
      });
      res.end(req.method === 'HEAD' ? undefined : asset.body);
      return;
    }
  }
  let pathMatched = false;
  for (const route of d.routes) {
    const m = route.pattern.exec(url.pathname);
    if (!m) continue;
    pathMatched = true;
    if (route.method !== req.method) continue;
    if (route.writes) {
      if (!hasToken(req, d.token)) throw new MsgflowError('UI_UNAUTHORIZED');
      const reason = crossSiteReason(req);
      if (reason) throw new MsgflowError('UI_FORBIDDEN', { reason });
    }
    await route.handler(req, res, m, url);
    return;
  }
  if (pathMatched) throw new MsgflowError('HTTP_METHOD_NOT_ALLOWED', { method: url.pathname, expected: 'another method', got: req.method });
  throw new MsgflowError('UI_NOT_FOUND', { what: url.pathname });
}

/** The JSON error answer `{ error: { code, message, field? } }`; a stream already started is cut instead. */
function answerError(
  req: IncomingMessage,
  res: ServerResponse,
  e: unknown,
  logger: Logger | undefined,
  scrub: (text: string) => string,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const err = e instanceof MsgflowError ? e : undefined;
  const status = statusFor(err);
  if (status >= 500 && status !== 503) logger?.error(`dashboard: ${req.method} ${req.url}: ${scrub((e as Error).message)}`);
  sendJson(
    res,
    status,
    {
      error: {
        code: err?.code ?? 'INTERNAL',
        message: err ? err.message : `internal error: ${(e as Error).message}`,
        ...(err && typeof err.params.field === 'string' ? { field: err.params.field } : {}),
      },
    },
    scrub,
  );
}

/**
 * The HTTP status of an error: the catalogue's when it has one; a store or
 * an engine that cannot take work now is 503; any other refusal of the
 * engine (a run that is live elsewhere, a flow whose concurrency slot is
 * taken, an unfinished run) is a conflict with the current state, 409.
 */
function statusFor(err: MsgflowError | undefined): number {
  if (!err) return 500;
  if (err.code === 'STORE_UNAVAILABLE' || err.code === 'ENGINE_STOPPED') return 503;
  if (err.code === 'RUN_NOT_FOUND') return 404;
  if (err.code === 'INTERNAL') return 500;
  return err.status ?? 409;
}

export { isLoopbackHost };
