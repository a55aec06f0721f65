/**
 * The dashboard's routes: the JSON API, report files, server-sent events,
 * /healthz and /metrics (docs/dashboard.md lists them).
 */
import { listAlerts } from '../engine/alerts/records.js';
import { listSessionsApi } from './sessions.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  auditHistory,
  cancelRun,
  getRun,
  liftPauses,
  listFlows,
  listInstances,
  parseRunQuery,
  preflight,
  reportFile,
  retryRun,
  startRun,
  startBackfill,
  type ApiContext,
} from './api.js';
import type { EventHub } from './events.js';
import type { FollowHub } from './follow.js';
import { checkHealth, type Reachability } from './health.js';
import { decodeSegment as decode, readBody, SECURITY_HEADERS, sendJson, sendText as send } from './http.js';
import type { UiMetrics } from './metrics.js';
import { parseRunSearch, runMatcher } from './run-search.js';
import type { RunIndex } from './run-index.js';
import { toRunSummary } from './views.js';

export type Handler = (req: IncomingMessage, res: ServerResponse, m: RegExpExecArray, url: URL) => Promise<void>;

export interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  /** Changes state: needs the token and passes the cross-site checks. */
  writes?: boolean;
  handler: Handler;
}

export interface RouteDeps {
  ctx: ApiContext;
  index: RunIndex;
  events: EventHub;
  follow: FollowHub;
  metrics: UiMetrics;
  reachability: () => Promise<Record<string, Reachability>>;
}

/** A writing POST on `/api/flows/<name>/…` whose JSON body `create` turns into what it made (201). */
function createdFrom(
  pattern: RegExp,
  create: (flow: string, body: unknown) => Promise<unknown>,
  json: (res: ServerResponse, status: number, body: unknown) => void,
): Route {
  return {
    method: 'POST',
    pattern,
    writes: true,
    handler: async (req, res, m) => {
      const body = await readBody(req, res);
      if (body) json(res, 201, await create(decode(m[1]!), body.value));
    },
  };
}

/**
 * GET /api/runs. The same list asked again while the index has not changed
 * is answered from the text already built.
 */
function runListHandler(index: RunIndex, scrub: (text: string) => string): Handler {
  /** Answers by query string, valid while the index's version stays. */
  const runLists = new Map<string, { version: number; text: string }>();
  return async (_q, res, _m, url) => {
    const query = parseRunQuery(url.searchParams);
    const search = parseRunSearch(url.searchParams);
    await index.ensure();
    // From here on, synchronous: the answer and the version it is cached under describe the same state.
    const key = url.search;
    const version = index.version();
    const hit = runLists.get(key);
    if (hit && hit.version === version) return send(res, 200, hit.text);
    const text = scrub(JSON.stringify({ runs: index.listNow(query, search && runMatcher(search)).map(toRunSummary) }));
    if (runLists.size >= 64) runLists.delete(runLists.keys().next().value!);
    runLists.set(key, { version, text });
    send(res, 200, text);
  };
}

function runDetailHandler(ctx: ApiContext): Handler {
  return async (_q, res, m) => {
    const entry = await getRun(ctx, decode(m[1]!));
    // A finished run's entry is cached: it is serialised once.
    entry.text ??= ctx.runtime.redactor.scrub(JSON.stringify(entry.value));
    send(res, 200, entry.text);
  };
}

function reportHandler(ctx: ApiContext): Handler {
  return async (_q, res, m) => {
    const file = await reportFile(ctx, decode(m[1]!), decode(m[2]!));
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': file.type,
      'content-length': String(file.size),
      'content-disposition': `inline; filename="${file.name.replace(/[^\w.-]/g, '_')}"`,
      'cache-control': 'no-store',
    });
    file.open().pipe(res);
  };
}

/** JSON answers scrubbed with the runtime's redactor. */
function jsonOf(ctx: ApiContext): (res: ServerResponse, status: number, body: unknown) => void {
  return (res, status, body) => sendJson(res, status, body, ctx.runtime.redactor.scrub);
}

function operationsRoutes(d: RouteDeps): Route[] {
  const json = jsonOf(d.ctx);
  return [
    {
      method: 'GET',
      pattern: /^\/api\/events$/,
      handler: async (req, res, _m, url) => {
        const flow = url.searchParams.get('flow');
        if (flow === null) d.events.attach(req, res);
        else d.follow.attach(req, res, flow);
      },
    },
    {
      method: 'GET',
      pattern: /^\/healthz$/,
      handler: async (_q, res) => {
        const answer = await checkHealth(d.ctx.runtime, d.reachability);
        json(res, answer.store.ok ? 200 : 503, answer);
      },
    },
    {
      method: 'GET',
      pattern: /^\/metrics$/,
      handler: async (_q, res) => {
        const text = d.ctx.runtime.redactor.scrub(await d.metrics.render());
        res.writeHead(200, { 'content-type': d.metrics.registry.contentType, 'cache-control': 'no-store' });
        res.end(text);
      },
    },
  ];
}

/** Every route of the server, first match by path wins. */
export function buildRoutes(d: RouteDeps): Route[] {
  const { ctx } = d;
  const json = jsonOf(ctx);
  return [
    { method: 'GET', pattern: /^\/api\/flows$/, handler: async (_q, res) => json(res, 200, await listFlows(ctx)) },
    {
      method: 'GET',
      pattern: /^\/api\/flows\/([^/]+)\/preflight$/,
      handler: async (_q, res, m) => json(res, 200, preflight(ctx, decode(m[1]!))),
    },
    { method: 'GET', pattern: /^\/api\/runs$/, handler: runListHandler(d.index, ctx.runtime.redactor.scrub) },
    { method: 'GET', pattern: /^\/api\/runs\/([^/]+)$/, handler: runDetailHandler(ctx) },
    { method: 'GET', pattern: /^\/api\/runs\/([^/]+)\/steps\/([^/]+)\/report$/, handler: reportHandler(ctx) },
    createdFrom(/^\/api\/flows\/([^/]+)\/runs$/, (flow, body) => startRun(ctx, flow, body), json),
    createdFrom(/^\/api\/flows\/([^/]+)\/backfill$/, (flow, body) => startBackfill(ctx, flow, body), json),
    {
      method: 'POST',
      pattern: /^\/api\/runs\/([^/]+)\/cancel$/,
      writes: true,
      handler: async (_q, res, m) => json(res, 202, await cancelRun(ctx, decode(m[1]!))),
    },
    {
      method: 'POST',
      pattern: /^\/api\/runs\/([^/]+)\/retry$/,
      writes: true,
      handler: async (_q, res, m) => json(res, 201, await retryRun(ctx, decode(m[1]!))),
    },
    { method: 'GET', pattern: /^\/api\/instances$/, handler: async (_q, res) => json(res, 200, await listInstances(ctx)) },
    { method: 'GET', pattern: /^\/api\/sessions$/, handler: async (_q, res) => json(res, 200, await listSessionsApi(ctx.runtime)) },
    {
      method: 'GET',
      pattern: /^\/api\/alerts$/,
      handler: async (_q, res) => json(res, 200, { alerts: await listAlerts(ctx.runtime.store) }),
    },
    {
      method: 'POST',
      pattern: /^\/api\/instances\/([^/]+)\/pauses\/lift$/,
      writes: true,
      handler: async (_q, res, m) => json(res, 200, await liftPauses(ctx, decode(m[1]!))),
    },
    {
      method: 'GET',
      pattern: /^\/api\/plots\/audit$/,
      handler: async (_q, res, _m, url) => json(res, 200, await auditHistory(ctx, url.searchParams)),
    },
    ...operationsRoutes(d),
  ];
}
