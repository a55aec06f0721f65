/**
 * `http.request`: one HTTP call to another server (a CRM, a webhook, an
 * alerting endpoint) from a flow, with the answer as the step's output.
 *
 * - Retries go by the one failure classification (api/failure.ts): an answer
 *   408, 429 or 5xx, a network error or no answer in time is tried again with
 *   the one backoff rule (util/backoff.ts), honouring the server's
 *   Retry-After (client/backoff.ts parses it); any other 4xx is final.
 * - Loopback, private and link-local addresses are refused unless the step
 *   says `allowPrivate: true` or config.yaml's `http.allowPrivate` allows
 *   them (all, or listed hosts/CIDRs): checked on the URL and on every address the
 *   host name resolves to, before connecting (util/address-range.ts). The
 *   call follows no redirect, so no hop escapes the check.
 * - Messages name the request as `POST https://host/path`: never its query
 *   string, headers or body, which hold keys; the runtime's redactor hides
 *   `${{ secrets.* }}` values wherever else they might surface.
 * - A dry run prints the request (method, URL, header names, body) instead
 *   of sending it, and returns it as the output.
 */
import { isIP } from 'node:net';
import type { Agent, Dispatcher } from 'undici';

/**
 * undici, loaded with a step's first request: the registry loads this action in every msgflow
 * process, and undici's import alone is ~80 ms of CPU that most processes never need.
 */
const loadUndici = () => import('undici');
import { z } from 'zod';
import { MsgflowError } from '../api/errors.js';
import { classify } from '../api/failure.js';
import { parseRetryAfter } from '../client/backoff.js';
import { defineAction, type ActionContext } from '../engine/action.js';
import { guardedLookup, privateAllowance, privateRange, type PrivateAllowance } from '../util/address-range.js';
import { backoffDelay } from '../util/backoff.js';
import { displayUrl } from '../util/display-url.js';
import { formatDuration } from '../util/duration.js';
import { duration } from './duration.js';

export const HTTP_REQUEST = 'http.request';

const Scalar = z.union([z.string(), z.number(), z.boolean()]);

const HttpRequestInput = z
  .strictObject({
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']).default('GET').describe('HTTP method. @default GET'),
    url: z.string().min(1).describe('http:// or https:// URL.'),
    query: z.record(z.string(), Scalar).optional().describe('Query parameters added to the URL.'),
    headers: z.record(z.string(), Scalar).default({}).describe('Request headers, e.g. Authorization: Bearer ${{ secrets.CRM_TOKEN }}.'),
    json: z.unknown().optional().describe('A body sent as JSON (Content-Type: application/json).'),
    form: z.record(z.string(), Scalar).optional().describe('A body sent as application/x-www-form-urlencoded.'),
    body: z.string().optional().describe('A body sent as text, as written (set Content-Type in headers).'),
    timeout: duration('No complete answer within this long is a TIMEOUT (retryable). @default 30s').default(30_000),
    retry: z
      .strictObject({
        attempts: z.number().int().min(1).max(20).default(3).describe('Attempts including the first. @default 3'),
        delay: duration('First delay between attempts (doubled each time, jittered). @default 1s').default(1000),
        maxDelay: duration(
          "Cap on one delay; a Retry-After asking for longer ends the retries (the step's own retry: may try later). @default 1m",
        ).default(60_000),
      })
      .prefault({})
      .describe('Retries of a retryable failure (408, 429, 5xx, network, timeout); other answers are final.'),
    failOnStatus: z
      .boolean()
      .default(true)
      .describe('A status outside 2xx fails the step (HTTP_STATUS); false returns it as output.status instead. @default true'),
    allowPrivate: z
      .boolean()
      .default(false)
      .describe('Allow loopback, private and link-local addresses (refused by default: HTTP_ADDRESS_REFUSED). @default false'),
    maxResponseBytes: z
      .number()
      .int()
      .positive()
      .default(5 * 1024 * 1024)
      .describe('Longest answer body read. @default 5242880'),
  })
  .describe('One HTTP request; the answer is the output.');

type HttpRequestInput = z.output<typeof HttpRequestInput>;

/** The step's output. */
export interface HttpResponse {
  status: number;
  /** True for a 2xx status. */
  ok: boolean;
  /** Answer headers, names in lower case. */
  headers: Record<string, string>;
  /** The body as text. */
  text: string;
  /** The body parsed as JSON when it is JSON, else null. */
  json: unknown;
  /** Attempts made (1 when the first answered). */
  attempts: number;
}

/** What a dry run returns: the request it would send. */
export interface HttpDryRun {
  dryRun: true;
  request: { method: string; url: string; headers: string[]; body?: string };
}

/** The URL with `query` added; a USAGE-free, located input error when it is not http(s). */
function targetUrl(input: HttpRequestInput): URL {
  let u: URL;
  try {
    u = new URL(input.url);
  } catch {
    throw new MsgflowError('ACTION_INPUT_INVALID', { action: HTTP_REQUEST, field: 'url', reason: 'not a valid URL' });
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new MsgflowError('ACTION_INPUT_INVALID', { action: HTTP_REQUEST, field: 'url', reason: `${u.protocol} is not http: or https:` });
  for (const [k, v] of Object.entries(input.query ?? {})) u.searchParams.append(k, String(v));
  return u;
}

/** The body and its Content-Type, from json / form / body. */
function bodyOf(input: HttpRequestInput): { body?: string; type?: string } {
  if (input.json !== undefined) return { body: JSON.stringify(input.json), type: 'application/json' };
  if (input.form !== undefined) {
    const form = new URLSearchParams(Object.entries(input.form).map(([k, v]): [string, string] => [k, String(v)]));
    return { body: form.toString(), type: 'application/x-www-form-urlencoded' };
  }
  return input.body === undefined ? {} : { body: input.body };
}

function headersOf(input: HttpRequestInput, type: string | undefined): Record<string, string> {
  const out: Record<string, string> = { 'user-agent': 'msgflow' };
  if (type) out['content-type'] = type;
  for (const [k, v] of Object.entries(input.headers)) out[k.toLowerCase()] = String(v);
  return out;
}

/** A call's refusal when `address` is a non-public one that neither the step nor config.yaml allows. */
function refusal(request: string, host: string, address: string, allowed: PrivateAllowance): MsgflowError | undefined {
  const range = privateRange(address);
  if (range === undefined || allowed.allows(host, address)) return undefined;
  return new MsgflowError('HTTP_ADDRESS_REFUSED', { request, host, address, range });
}

/** A dispatcher whose connections go only to addresses the step may reach. */
async function dispatcherFor(input: HttpRequestInput, u: URL, shown: string, allowed: PrivateAllowance): Promise<Agent | undefined> {
  if (input.allowPrivate || allowed.all) return undefined;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const refused = refusal(shown, host, host, allowed);
    if (refused) throw refused;
  }
  const { Agent } = await loadUndici();
  return new Agent({ connect: { lookup: guardedLookup((name, address) => refusal(shown, name, address, allowed)) as never } });
}

/** Reads at most `limit` bytes of the body; longer is HTTP_RESPONSE_TOO_LARGE. */
async function readBody(body: Dispatcher.ResponseData['body'], limit: number, shown: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      throw new MsgflowError('HTTP_RESPONSE_TOO_LARGE', { request: shown, limit });
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function flatHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

function parseJson(text: string, type: string | undefined): unknown {
  if (!type || !/\bjson\b/i.test(type)) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** An error of the transport (no answer) as a catalogue error: TIMEOUT or NETWORK_ERROR, both retryable. */
function transportError(e: unknown, shown: string, timeoutMs: number, timedOut: boolean): unknown {
  if (e instanceof MsgflowError) return e;
  // undici wraps what a lookup callback refused.
  const cause = (e as { cause?: unknown } | null)?.cause;
  if (cause instanceof MsgflowError) return cause;
  if (timedOut) return new MsgflowError('TIMEOUT', { method: shown, timeoutMs }, { cause: e });
  const code = (e as { code?: unknown } | null)?.code;
  const reason = typeof code === 'string' ? code : e instanceof Error ? e.message : String(e);
  return new MsgflowError('NETWORK_ERROR', { method: shown, reason }, { cause: e });
}

/** One attempt. */
async function send(
  ctx: ActionContext,
  input: HttpRequestInput,
  u: URL,
  attempt: number,
  allowed: PrivateAllowance,
): Promise<HttpResponse> {
  const shown = `${input.method} ${displayUrl(u)}`;
  const { body, type } = bodyOf(input);
  const dispatcher = await dispatcherFor(input, u, shown, allowed);
  const { request } = await loadUndici();
  const timer = AbortSignal.timeout(input.timeout);
  try {
    const res = await request(u, {
      method: input.method,
      headers: headersOf(input, type),
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.any([ctx.signal, timer]),
      headersTimeout: input.timeout,
      bodyTimeout: input.timeout,
      ...(dispatcher ? { dispatcher } : {}),
    });
    const headers = flatHeaders(res.headers);
    const text = await readBody(res.body, input.maxResponseBytes, shown);
    const out: HttpResponse = {
      status: res.statusCode,
      ok: res.statusCode >= 200 && res.statusCode <= 299,
      headers,
      text,
      json: parseJson(text, headers['content-type']),
      attempts: attempt,
    };
    if (!out.ok && input.failOnStatus) {
      const retryAfter = headers['retry-after'];
      throw new MsgflowError('HTTP_STATUS', { request: shown, status: res.statusCode, retryAfter }, { status: res.statusCode });
    }
    ctx.logger.debug(`${shown}: HTTP ${res.statusCode}`);
    return out;
  } catch (e) {
    if (ctx.signal.aborted) throw e;
    throw transportError(e, shown, input.timeout, timer.aborted);
  } finally {
    await dispatcher?.close().catch(() => {});
  }
}

/** How long to wait before attempt `attempt + 1`, or undefined to stop (the answer asked for longer than maxDelay). */
function retryWait(input: HttpRequestInput, attempt: number, now: number, retryAfter?: string): number | undefined {
  const asked = parseRetryAfter(retryAfter, now);
  if (asked !== undefined) return asked <= input.retry.maxDelay ? asked : undefined;
  return backoffDelay({ baseMs: input.retry.delay, maxMs: input.retry.maxDelay, jitter: 'equal' }, attempt);
}

async function run(ctx: ActionContext, input: HttpRequestInput, allowed: PrivateAllowance): Promise<HttpResponse | HttpDryRun> {
  const u = targetUrl(input);
  const shown = `${input.method} ${displayUrl(u)}`;
  if (ctx.run.dryRun) {
    const { body, type } = bodyOf(input);
    const headers = Object.keys(headersOf(input, type));
    // Header values may be keys: the dry run names them, the redactor hides secrets in the rest.
    ctx.logger.info(`dry run: would send ${shown} (headers: ${headers.join(', ')})${body === undefined ? '' : ` body: ${body}`}`);
    return { dryRun: true, request: { method: input.method, url: displayUrl(u), headers, ...(body === undefined ? {} : { body }) } };
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await send(ctx, input, u, attempt, allowed);
    } catch (e) {
      if (ctx.signal.aborted || classify(e) !== 'retryable' || attempt >= input.retry.attempts) throw e;
      const retryAfter = e instanceof MsgflowError ? e.params.retryAfter : undefined;
      const wait = retryWait(input, attempt, ctx.clock.now(), typeof retryAfter === 'string' ? retryAfter : undefined);
      if (wait === undefined) throw e;
      ctx.logger.warn(`${(e as Error).message}; attempt ${attempt + 1} of ${input.retry.attempts} in ${formatDuration(wait)}`);
      await ctx.clock.sleep(wait, ctx.signal);
    }
  }
}

/**
 * The action with config.yaml's `http.allowPrivate` (src/config/schema.ts):
 * the private hosts every step may reach without its own `allowPrivate`.
 */
export function httpRequestAction(allowPrivate: boolean | readonly string[] = false) {
  const allowed = privateAllowance(allowPrivate);
  return defineAction({
    ...HTTP_REQUEST_DEFINITION,
    run: (ctx: ActionContext, input: HttpRequestInput) => run(ctx, input, allowed),
  });
}

const HTTP_REQUEST_DEFINITION = {
  name: HTTP_REQUEST,
  description:
    'Sends one HTTP request (a CRM, a webhook, an alert endpoint) and returns the answer: retries 408/429/5xx and network failures with backoff and Retry-After, refuses private addresses unless allowPrivate.',
  input: HttpRequestInput,
  dryRun: true,
  output: { description: '{ status, ok, headers, text, json, attempts } (a dry run: { dryRun: true, request })' },
  checkWith: (w: Record<string, unknown>) => {
    const bodies = ['json', 'form', 'body'].filter((k) => w[k] !== undefined);
    return bodies.length > 1 ? `give one body: json, form or body, not ${bodies.join(' and ')}` : undefined;
  },
};

/** The action as registered when config.yaml allows no private host. */
export const httpRequest = httpRequestAction();
