/**
 * The dashboard server: static pages, the JSON API, server-sent events,
 * /healthz and /metrics, on node:http (a handful of routes need no
 * framework). `msgflow start` serves it beside the flows it runs;
 * `msgflow ui` serves it alone over the same store.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MsgflowError } from '../api/errors.js';
import type { Runtime } from '../runtime/runtime.js';
import { portInUseError } from '../util/port-in-use.js';
import { registerSecrets, scrub } from '../util/secrets.js';
import type { Logger } from '../util/logger.js';
import { auditHistory, cancelRun, getRun, liftPauses, listFlows, listInstances, parseRunQuery, reportFile, retryRun, startRun, type ApiContext } from './api.js';
import { toRunSummary } from './views.js';
import { createEventHub, type EventHub } from './events.js';
import { createUiMetrics, type UiMetrics } from './metrics.js';
import { createRunIndex, type RunIndex } from './run-index.js';
import { checkBind, crossSiteReason, hasToken, hostHeaderAllowed, isLoopbackHost } from './safety.js';
import { PAUSES_NAMESPACE } from './api.js';

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
  /**
   * Whether /healthz may open the local service to probe a local instance
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
    // uPlot from node_modules: bundled with the package, never a CDN.
    ['/assets/uplot.js', path.join(uplotDir, 'uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
    ['/assets/uplot.css', path.join(uplotDir, 'uPlot.min.css'), 'text/css; charset=utf-8'],
  ];
  return new Map(files.map(([route, file, type]) => [route, { body: readFileSync(file), type }]));
}

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  // Scripts only from this server: an injected <script> would not run even if escaping failed.
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
};

const MAX_BODY = 1 << 20;

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new MsgflowError('PAYLOAD_TOO_LARGE', { limit: MAX_BODY }));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.trim() === '') return resolve(undefined);
      try {
        resolve(JSON.parse(text));
      } catch (e) {
        reject(new MsgflowError('UI_BAD_REQUEST', { field: 'body', reason: `not valid JSON (${(e as Error).message})` }));
      }
    });
    req.on('error', reject);
  });
}

type Handler = (req: IncomingMessage, res: ServerResponse, m: RegExpExecArray, url: URL) => Promise<void>;
interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  /** Changes state: needs the token and passes the cross-site checks. */
  writes?: boolean;
  handler: Handler;
}

export async function createUiServer(opts: UiServerOptions): Promise<UiServer> {
  const { runtime } = opts;
  const host = opts.host ?? '127.0.0.1';
  const token = opts.token ?? '';
  checkBind(host, token);
  // The token is a secret like an instance token: scrubbed from anything this process prints or answers.
  if (token) registerSecrets({ apiTokenInstance: token });

  const assets = loadAssets();
  const now = () => runtime.clock.now();
  const index = createRunIndex({ store: runtime.store, engine: runtime.engine, reloadMs: opts.reloadMs, recentMs: opts.recentMs });
  const events = createEventHub({ bus: runtime.bus, index, throttleMs: opts.throttleMs, pollMs: opts.pollMs, scrub });
  const metrics = createUiMetrics({ bus: runtime.bus, runs: () => index.all(), pauses: runtime.store.kv(PAUSES_NAMESPACE), now });
  const ctx: ApiContext = { runtime, index, now, detailCache: new Map() };
  // Read the history now, in the background: the first page opened does not wait for it (about 2 s at 10,000 runs).
  void index.all().catch(() => {});

  const send = (res: ServerResponse, status: number, text: string) => {
    res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    res.end(text);
  };
  const json = (res: ServerResponse, status: number, body: unknown) => send(res, status, scrub(JSON.stringify(body)));
  /** Answers of GET /api/runs by query string, valid while the index's version stays. */
  const runLists = new Map<string, { version: number; text: string }>();
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      throw new MsgflowError('UI_BAD_REQUEST', { field: 'path', reason: `'${s}' is not a valid URL path segment` });
    }
  };

  const routes: Route[] = [
    { method: 'GET', pattern: /^\/api\/flows$/, handler: async (_q, res) => json(res, 200, await listFlows(ctx)) },
    {
      method: 'GET',
      pattern: /^\/api\/runs$/,
      handler: async (_q, res, _m, url) => {
        // The same list asked again while the index has not changed is answered from the text already built.
        const query = parseRunQuery(url.searchParams);
        await index.ensure();
        // From here on, synchronous: the answer and the version it is cached under describe the same state.
        const key = url.search;
        const version = index.version();
        const hit = runLists.get(key);
        if (hit && hit.version === version) return send(res, 200, hit.text);
        const text = scrub(JSON.stringify({ runs: index.listNow(query).map(toRunSummary) }));
        if (runLists.size >= 64) runLists.delete(runLists.keys().next().value!);
        runLists.set(key, { version, text });
        send(res, 200, text);
      },
    },
    {
      method: 'GET',
      pattern: /^\/api\/runs\/([^/]+)$/,
      handler: async (_q, res, m) => {
        const entry = await getRun(ctx, decode(m[1]!));
        // A finished run's entry is cached: it is serialised once.
        entry.text ??= scrub(JSON.stringify(entry.value));
        send(res, 200, entry.text);
      },
    },
    {
      method: 'GET',
      pattern: /^\/api\/runs\/([^/]+)\/steps\/([^/]+)\/report$/,
      handler: async (_q, res, m) => {
        const file = await reportFile(ctx, decode(m[1]!), decode(m[2]!));
        res.writeHead(200, {
          ...SECURITY_HEADERS,
          'content-type': file.type,
          'content-length': String(file.size),
          'content-disposition': `inline; filename="${file.name.replace(/[^\w.-]/g, '_')}"`,
          'cache-control': 'no-store',
        });
        file.open().pipe(res);
      },
    },
    {
      method: 'POST',
      pattern: /^\/api\/flows\/([^/]+)\/runs$/,
      writes: true,
      handler: async (req, res, m) => json(res, 201, await startRun(ctx, decode(m[1]!), await readBody(req))),
    },
    { method: 'POST', pattern: /^\/api\/runs\/([^/]+)\/cancel$/, writes: true, handler: async (_q, res, m) => json(res, 202, await cancelRun(ctx, decode(m[1]!))) },
    { method: 'POST', pattern: /^\/api\/runs\/([^/]+)\/retry$/, writes: true, handler: async (_q, res, m) => json(res, 201, await retryRun(ctx, decode(m[1]!))) },
    { method: 'GET', pattern: /^\/api\/instances$/, handler: async (_q, res) => json(res, 200, await listInstances(ctx)) },
    {
      method: 'POST',
      pattern: /^\/api\/instances\/([^/]+)\/pauses\/lift$/,
      writes: true,
      handler: async (_q, res, m) => json(res, 200, await liftPauses(ctx, decode(m[1]!))),
    },
    { method: 'GET', pattern: /^\/api\/plots\/audit$/, handler: async (_q, res, _m, url) => json(res, 200, await auditHistory(ctx, url.searchParams)) },
    { method: 'GET', pattern: /^\/api\/events$/, handler: async (_q, res) => events.attach(res) },
    { method: 'GET', pattern: /^\/healthz$/, handler: async (_q, res) => health(res) },
    {
      method: 'GET',
      pattern: /^\/metrics$/,
      handler: async (_q, res) => {
        const text = scrub(await metrics.render());
        res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
        res.end(text);
      },
    },
  ];

  const reachability = createReachability(runtime, opts.probeLocal ?? true);

  async function health(res: ServerResponse): Promise<void> {
    let store: { ok: boolean; driver: string; error?: string };
    try {
      // A write and a read of one small record: proves the backend takes writes, at a cost that does not grow with history.
      const kv = runtime.store.kv('ui');
      const t = now();
      await kv.set('healthz', t);
      const back = await kv.get<number>('healthz');
      store = back === undefined ? { ok: false, driver: runtime.store.driver, error: 'a written record could not be read back' } : { ok: true, driver: runtime.store.driver };
    } catch (e) {
      store = { ok: false, driver: runtime.store.driver, error: (e as Error).message };
    }
    const instances = await reachability();
    json(res, store.ok ? 200 : 503, { status: store.ok ? 'ok' : 'unavailable', store, instances });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    if (!hostHeaderAllowed(req, host)) {
      throw new MsgflowError('UI_FORBIDDEN', { reason: `Host '${req.headers.host}' is not this dashboard's address` });
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      const asset = assets.get(url.pathname === '/index.html' ? '/' : url.pathname);
      if (asset) {
        res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': asset.type, 'content-length': String(asset.body.length), 'cache-control': 'no-cache' });
        res.end(req.method === 'HEAD' ? undefined : asset.body);
        return;
      }
    }
    let pathMatched = false;
    for (const route of routes) {
      const m = route.pattern.exec(url.pathname);
      if (!m) continue;
      pathMatched = true;
      if (route.method !== req.method) continue;
      if (route.writes) {
        if (!hasToken(req, token)) throw new MsgflowError('UI_UNAUTHORIZED');
        const reason = crossSiteReason(req);
        if (reason) throw new MsgflowError('UI_FORBIDDEN', { reason });
      }
      await route.handler(req, res, m, url);
      return;
    }
    if (pathMatched) throw new MsgflowError('HTTP_METHOD_NOT_ALLOWED', { method: url.pathname, expected: 'another method', got: req.method });
    throw new MsgflowError('UI_NOT_FOUND', { what: url.pathname });
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const err = e instanceof MsgflowError ? e : undefined;
      const status = statusFor(err);
      if (status >= 500 && status !== 503) opts.logger?.error(`dashboard: ${req.method} ${req.url}: ${scrub((e as Error).message)}`);
      json(res, status, {
        error: {
          code: err?.code ?? 'INTERNAL',
          message: err ? err.message : `internal error: ${(e as Error).message}`,
          ...(err && typeof err.params.field === 'string' ? { field: err.params.field } : {}),
        },
      });
    });
  });
  // SSE streams stay open: keep-alive timeouts must not cut them.
  server.requestTimeout = 0;
  server.headersTimeout = 30_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      reject(portInUseError(e, { port: opts.port ?? 7071, key: 'ui.port in config.yaml (or --port)' }) ?? e);
    });
    server.listen(opts.port ?? 7071, host, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : (opts.port ?? 7071);
  const shownHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${shownHost}:${port}`,
    port,
    host,
    index,
    events,
    metrics,
    async close() {
      events.close();
      metrics.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
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

/**
 * Each instance's reachability for /healthz, without spending the instance's
 * API quota: a TCP connection to the remote service (or to the local service
 * of another msgflow process), or the in-process local service. Cached for a
 * few seconds so a probe loop cannot hammer anything.
 */
type Reachability = { kind: 'local' | 'remote'; reachable: boolean | null; error?: string; note?: string };

function createReachability(runtime: Runtime, probeLocal: boolean, ttlMs = 10_000) {
  let cached: { at: number; value: Record<string, Reachability> } | undefined;
  const tcp = (target: string) =>
    new Promise<string | undefined>((resolve) => {
      let u: URL;
      try {
        u = new URL(target);
      } catch {
        return resolve('not a URL');
      }
      const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
      const socket = connect({ host: u.hostname, port, timeout: 2000 });
      socket.once('connect', () => {
        socket.destroy();
        resolve(undefined);
      });
      socket.once('timeout', () => {
        socket.destroy();
        resolve('no answer within 2 s');
      });
      socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
  return async () => {
    if (cached && Date.now() - cached.at < ttlMs) return cached.value;
    const value: Record<string, Reachability> = {};
    await Promise.all(
      Object.entries(runtime.config.instances).map(async ([name, inst]) => {
        if (inst.apiUrl !== 'local') {
          const error = await tcp(inst.apiUrl);
          value[name] = { kind: 'remote', reachable: error === undefined, ...(error ? { error: scrub(error) } : {}) };
          return;
        }
        if (!probeLocal) {
          value[name] = { kind: 'local', reachable: null, note: 'not probed: the local service belongs to the daemon or to msgflow run' };
          return;
        }
        try {
          const local = await runtime.local();
          const error = local.mode === 'remote' ? await tcp(local.url) : undefined;
          value[name] = { kind: 'local', reachable: error === undefined, ...(error ? { error } : {}) };
        } catch (e) {
          value[name] = { kind: 'local', reachable: false, error: scrub((e as Error).message) };
        }
      }),
    );
    cached = { at: Date.now(), value };
    return value;
  };
}

export { isLoopbackHost };
