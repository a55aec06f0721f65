/**
 * Starts a local service in a temp dir with a ManualClock and gives a test
 * one way to call it: over HTTP (the client's got transport against
 * 127.0.0.1:0) or in-process (createInProcessTransport). The conformance
 * suite runs against both and must not be able to tell them apart.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { afterEach, beforeEach } from 'vitest';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { METHOD_SPECS, type ApiMethod } from '../../../src/api/methods.js';
import { createHttpTransport } from '../../../src/client/http-transport.js';
import type { Transport, TransportResponse } from '../../../src/client/transport.js';
import { LocalSchema, type LocalConfig } from '../../../src/local/config.js';
import { createLocalService, type LocalService } from '../../../src/local/service.js';
import { createInProcessTransport } from '../../../src/runtime/in-process-transport.js';
import { ManualClock } from '../../../src/util/clock.js';
import { network } from '../../support/network.js';

export type TransportKind = 'http' | 'in-process';

export const A = { idInstance: '1101000001', apiTokenInstance: 'token-aaaa-1111' } as const;
export const B = { idInstance: '1101000002', apiTokenInstance: 'token-bbbb-2222' } as const;
export const ALICE = '79001112233@c.us';
export const BOB = '79002223344@c.us';
export const CAROL = '79003334455@c.us';
export const HIDDEN = 79005550000;
export const NOBODY = '79009990000@c.us';
export const T0 = Date.parse('2026-03-01T10:00:00Z');

export interface HarnessOptions {
  kind: TransportKind;
  /** Seed file text for instance A. */
  seed?: string;
  /** Changes to the parsed `local:` config. */
  tweak?: (raw: Record<string, unknown>) => void;
}

export interface Harness {
  kind: TransportKind;
  clock: ManualClock;
  dir: string;
  service: LocalService;
  /** One attempt of a method on instance A (or `who`), as the client's transports send it. */
  call(
    method: ApiMethod,
    body?: unknown,
    opts?: {
      who?: { idInstance: string; apiTokenInstance: string };
      query?: Record<string, string>;
      pathParams?: string[];
      httpMethod?: 'GET' | 'POST' | 'DELETE';
      signal?: AbortSignal;
    },
  ): Promise<TransportResponse>;
  /** Admin endpoint of instance A. */
  admin(action: string, body?: unknown, httpMethod?: string): Promise<{ status: number; body: any }>;
  /** GET a downloadUrl: over the socket for http, through handle() in-process. */
  download(url: string): Promise<{ status: number; body: Buffer; headers: Record<string, string> }>;
  transportFor(who: { idInstance: string; apiTokenInstance: string }): Transport;
  /** Resolves when the queue has sent (or failed) this message. */
  settled(idMessage: string): Promise<'sent' | 'failed'>;
  /** Closes the service and starts a new one on the same data dir and clock. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export function baseConfig(dir: string, seedFile?: string): Record<string, unknown> {
  const zero = Object.fromEntries(Object.keys(METHOD_SPECS).map((m) => [m, 0]));
  return {
    port: 7070,
    dataDir: path.join(dir, 'data'),
    // The tests' file servers listen on 127.0.0.1.
    fetch: { allowPrivate: true },
    network: network({ deliveredAfterMs: 1000, readAfterMs: 5000 }),
    instances: [
      {
        ...A,
        sendIntervalMs: 1000,
        rateLimits: zero,
        checkAccountLimit: { numbers: 3, windowMinutes: 10, retryAfterSeconds: 7200 },
        ...(seedFile ? { seed: seedFile } : {}),
      },
      { ...B, rateLimits: { getChatHistory: 1 } },
    ],
  };
}

export async function startHarness(opts: HarnessOptions): Promise<Harness> {
  const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-local-'));
  let seedFile: string | undefined;
  if (opts.seed !== undefined) {
    seedFile = 'seed.yaml';
    await writeFile(path.join(dir, seedFile), opts.seed);
  }
  const raw = baseConfig(dir, seedFile);
  opts.tweak?.(raw);
  const config: LocalConfig = LocalSchema.parse(raw);
  const clock = new ManualClock(T0);
  let service!: LocalService;
  let url = '';
  let closeListener: (() => Promise<void>) | undefined;
  const transports = new Map<string, Transport>();
  // Outcomes are recorded from boot on, so a test that asks after the fact still gets its answer.
  const outcomes = new Map<string, 'sent' | 'failed'>();
  const waiters = new Map<string, (r: 'sent' | 'failed') => void>();
  const record = (id: string, r: 'sent' | 'failed') => {
    outcomes.set(id, r);
    waiters.get(id)?.(r);
    waiters.delete(id);
  };

  async function boot() {
    service = createLocalService(config, { baseDir: dir, clock });
    service.events.on('queue:sent', (e) => record(e.idMessage, 'sent'));
    service.events.on('queue:failed', (e) => record(e.idMessage, 'failed'));
    await service.start();
    transports.clear();
    if (opts.kind === 'http') {
      const l = await service.listen(0, '127.0.0.1');
      url = l.url;
      closeListener = l.close;
    }
  }
  await boot();

  const transportFor = (who: { idInstance: string; apiTokenInstance: string }): Transport => {
    const key = `${who.idInstance}/${who.apiTokenInstance}`;
    let t = transports.get(key);
    if (!t) {
      t =
        opts.kind === 'http'
          ? createHttpTransport({ apiUrl: url, ...who })
          : createInProcessTransport(service, who.idInstance, who.apiTokenInstance);
      transports.set(key, t);
    }
    return t;
  };

  const h: Harness = {
    kind: opts.kind,
    clock,
    dir,
    get service() {
      return service;
    },
    call(method, body, o = {}) {
      const httpMethod = o.httpMethod ?? METHOD_SPECS[method].httpMethod;
      return transportFor(o.who ?? A).request({
        method,
        httpMethod,
        body,
        query: o.query,
        pathParams: o.pathParams,
        timeoutMs: 20_000,
        signal: o.signal,
      });
    },
    async admin(action, body, httpMethod = body === undefined ? 'GET' : 'POST') {
      const p = `/_local/waInstance${A.idInstance}/${action}/${A.apiTokenInstance}`;
      const r = await service.handle({
        httpMethod,
        path: p,
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: r.body };
    },
    async download(fileUrl) {
      if (opts.kind === 'http') {
        const u = new URL(fileUrl);
        const res = await fetch(`${url}${u.pathname}`);
        return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: Object.fromEntries(res.headers) };
      }
      const r = await service.handle({ httpMethod: 'GET', path: new URL(fileUrl).pathname });
      const b = r.body as { kind?: string; stream?: NodeJS.ReadableStream };
      if (b && b.kind === 'file' && b.stream) {
        const chunks: Buffer[] = [];
        for await (const c of b.stream) chunks.push(Buffer.from(c as Buffer));
        return { status: r.status, body: Buffer.concat(chunks), headers: r.headers };
      }
      return { status: r.status, body: Buffer.from(JSON.stringify(r.body)), headers: r.headers };
    },
    transportFor,
    settled(idMessage) {
      const known = outcomes.get(idMessage);
      if (known) return Promise.resolve(known);
      return new Promise((resolve) => waiters.set(idMessage, resolve));
    },
    async restart() {
      await closeListener?.();
      await service.close();
      await boot();
    },
    async close() {
      await closeListener?.();
      await service.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return h;
}

/**
 * A fresh harness for each test of the enclosing describe (closed after it),
 * behind one stable handle the suite's tests use.
 *
 * @example
 * const h = useHarness(kind);
 * it('...', async () => expect((await h.call('checkAccount', { phoneNumber: 1 })).statusCode).toBe(200));
 */
export function useHarness(
  kind: TransportKind,
  options: Omit<HarnessOptions, 'kind'> | (() => Omit<HarnessOptions, 'kind'>) = {},
): Harness {
  let current: Harness | undefined;
  beforeEach(async () => {
    current = await startHarness({ kind, ...(typeof options === 'function' ? options() : options) });
  });
  afterEach(() => current?.close());
  return new Proxy({} as Harness, {
    get(_t, prop) {
      if (!current) throw new Error('useHarness: the harness exists only inside a test');
      const v = (current as unknown as Record<PropertyKey, unknown>)[prop];
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(current) : v;
    },
  });
}
