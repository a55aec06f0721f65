/**
 * msgflow's local service under test, the one harness for it: started over a
 * project folder (a temp one unless given) on an injected clock (a
 * ManualClock at T0 unless given), and reached the way a test needs it —
 * over HTTP on 127.0.0.1:0 (the client's got transport) or in-process
 * (createInProcessTransport). The conformance suite runs every case over both
 * and must not be able to tell them apart; the job tests count the requests
 * that reached the service.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { API_METHODS, METHOD_SPECS, type ApiMethod } from '../../src/api/methods.js';
import type { InstanceApi } from '../../src/api/types.js';
import { createClient } from '../../src/client/client.js';
import { createHttpTransport } from '../../src/client/http-transport.js';
import type { Transport, TransportResponse, UploadBody } from '../../src/client/transport.js';
import { LocalSchema, type LocalConfig } from '../../src/local/config.js';
import { createLocalService, type LocalService } from '../../src/local/service.js';
import { createInProcessTransport } from '../../src/runtime/in-process-transport.js';
import { ManualClock, type Clock } from '../../src/util/clock.js';
import { VirtualClock } from '../../src/util/virtual-clock.js';
import { createMediaStore } from '../../src/local/media/file-store.js';
import type { MediaStore } from '../../src/local/media/types.js';
import { startFileServer, type FileServer } from './file-server.js';
import { network } from './network.js';
import { project, writeData } from './project.js';
import { waitFor } from './wait.js';

export type TransportKind = 'http' | 'in-process';

/** The instances and chats every local-service test shares (./network.ts has the accounts). */
export const A = { idInstance: '1101000001', apiTokenInstance: 'token-aaaa-1111' } as const;
export const B = { idInstance: '1101000002', apiTokenInstance: 'token-bbbb-2222' } as const;
/** Instance A's id and token by the names the job tests use. */
export const ID = A.idInstance;
export const TOKEN = A.apiTokenInstance;
export const ALICE = '79001112233@c.us';
export const BOB = '79002223344@c.us';
export const CAROL = '79003334455@c.us';
export const HIDDEN = 79005550000;
export const NOBODY = '79009990000@c.us';
export const T0 = Date.parse('2026-03-01T10:00:00Z');

/** A temp project folder (test/support/project.ts). */
export const tempDir = async (prefix = 'msgflow-jobs-'): Promise<string> => project({}, prefix);
export { writeData };

/** Every method's local rate limit off (0): the tests measure the service, not its limiter. */
export function ratesOff(): Record<ApiMethod, number> {
  return Object.fromEntries(API_METHODS.map((m) => [m, 0])) as Record<ApiMethod, number>;
}

/**
 * The `local:` section the tests start from, parsed: instance A alone, every
 * rate limit off, a message every 500 ms, statuses after 200/400 ms, urlFile
 * allowed from 127.0.0.1 (the tests' file servers). `overrides` replace
 * top-level keys, `instance` instance A's.
 */
export function localConfig(overrides: Record<string, unknown> = {}, instance: Record<string, unknown> = {}): LocalConfig {
  return LocalSchema.parse({
    port: 0,
    dataDir: 'local-data',
    fetch: { allowPrivate: true },
    network: network({ deliveredAfterMs: 200, readAfterMs: 400 }),
    instances: [{ ...A, sendIntervalMs: 500, rateLimits: ratesOff(), ...instance }],
    ...overrides,
  });
}

/**
 * The conformance cast's `local:` section (raw, before LocalSchema.parse): A
 * sends every 1000 ms and may check 3 numbers per 10 minutes; B answers one
 * getChatHistory a second; statuses after 1000/5000 ms.
 */
export function conformanceRaw(): Record<string, unknown> {
  return {
    port: 7070,
    dataDir: 'data',
    fetch: { allowPrivate: true },
    network: network({ deliveredAfterMs: 1000, readAfterMs: 5000 }),
    instances: [
      {
        ...A,
        sendIntervalMs: 1000,
        rateLimits: ratesOff(),
        checkAccountLimit: { numbers: 3, windowMinutes: 10, retryAfterSeconds: 7200 },
      },
      { ...B, rateLimits: { getChatHistory: 1 } },
    ],
  };
}

/** conformanceRaw() after `tweak` changed it, parsed. */
export function conformanceConfig(tweak?: (raw: Record<string, unknown>) => void): LocalConfig {
  const raw = conformanceRaw();
  tweak?.(raw);
  return LocalSchema.parse(raw);
}

export interface LocalOptions<C extends Clock = Clock> {
  /** How the test reaches it. @default 'http' */
  kind?: TransportKind;
  /** The project folder (baseDir). @default a temp folder that close() removes */
  dir?: string;
  /** A VirtualClock (started by the caller) is held during each call and file fetch. @default a ManualClock at T0 */
  clock?: C;
  /** @default localConfig() */
  config?: LocalConfig;
  /** Seed file text for instance A (written to seed.yaml in `dir`). */
  seed?: string;
}

type Who = { idInstance: string; apiTokenInstance: string };

export interface Outcome {
  idMessage: string;
  what: 'sent' | 'failed';
  /** Why it failed. */
  reason?: string;
}

export interface LocalUnderTest<C extends Clock = Clock> {
  kind: TransportKind;
  clock: C;
  dir: string;
  /** The running service (a new one after restart()). */
  service: LocalService;
  /** Base URL over HTTP; there is none in-process. */
  url: string;
  /** Every request sent through this harness's transports, with its answer. */
  requests: { method: string; body: unknown; status: number; answer: unknown }[];
  /** A client of instance A (no retries, no client-side rate limit). */
  client: InstanceApi & { close?(): Promise<void> };
  /** A client of instance A with another token. */
  clientWith(token: string): InstanceApi & { close?(): Promise<void> };
  /** One attempt of a method on instance A (or `who`), as the client's transports send it. */
  call(
    method: ApiMethod,
    body?: unknown,
    opts?: {
      who?: Who;
      query?: Record<string, string>;
      pathParams?: string[];
      httpMethod?: 'GET' | 'POST' | 'DELETE';
      signal?: AbortSignal;
      /** A file upload (sendFileByUpload, uploadFile) instead of a JSON body. */
      upload?: UploadBody;
    },
  ): Promise<TransportResponse>;
  /** Admin endpoint of instance A. */
  admin(action: string, body?: unknown, httpMethod?: string): Promise<{ status: number; body: any }>;
  /** GET a downloadUrl: over the socket for http, through handle() in-process. */
  download(url: string): Promise<{ status: number; body: Buffer; headers: Record<string, string> }>;
  /** A transport for `who` that follows restarts. */
  transportFor(who: Who): Transport;
  /** What the send queue did with each message, in order (recorded from the start, across restarts). */
  outcomes: Outcome[];
  /** Resolves when the queue has sent (or failed) this message. */
  settled(idMessage: string): Promise<'sent' | 'failed'>;
  /** Closes the service and starts a new one on the same folder and clock. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a local service; see LocalOptions for the defaults. */
export function startLocal(opts?: LocalOptions<ManualClock> & { clock?: undefined }): Promise<LocalUnderTest<ManualClock>>;
export function startLocal<C extends Clock>(opts: LocalOptions<C> & { clock: C }): Promise<LocalUnderTest<C>>;
export async function startLocal(opts: LocalOptions = {}): Promise<LocalUnderTest> {
  const kind = opts.kind ?? 'http';
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? (await mkdtemp(path.join(tmpdir(), 'msgflow-local-')));
  const clock = opts.clock ?? new ManualClock(T0);
  let config = opts.config ?? localConfig();
  if (opts.seed !== undefined) {
    await writeFile(path.join(dir, 'seed.yaml'), opts.seed);
    config = { ...config, instances: config.instances.map((inst, i) => (i === 0 ? { ...inst, seed: 'seed.yaml' } : inst)) };
  }
  const requests: LocalUnderTest['requests'] = [];
  // Outcomes are recorded from boot on, so a test that asks after the fact still gets its answer.
  const outcomes: Outcome[] = [];
  const waiters = new Map<string, ((r: 'sent' | 'failed') => void)[]>();
  const record = (idMessage: string, what: 'sent' | 'failed', reason?: string) => {
    outcomes.push(reason === undefined ? { idMessage, what } : { idMessage, what, reason });
    for (const w of waiters.get(idMessage) ?? []) w(what);
    waiters.delete(idMessage);
  };
  let service!: LocalService;
  let url = '';
  let closeListener: (() => Promise<void>) | undefined;
  // The transports of the current boot; the ones handed out look them up per request.
  const current = new Map<string, Transport>();

  async function boot() {
    const mediaStore = clock instanceof VirtualClock ? heldMediaStore(config, dir, clock) : undefined;
    service = createLocalService(config, { baseDir: dir, clock, ...(mediaStore ? { mediaStore } : {}) });
    service.events.on('queue:sent', (e) => record(e.idMessage, 'sent'));
    service.events.on('queue:failed', (e) => record(e.idMessage, 'failed', e.reason));
    await service.start();
    current.clear();
    if (kind === 'http') {
      const l = await service.listen(0, '127.0.0.1');
      url = l.url;
      closeListener = l.close;
    }
  }
  async function shutdown() {
    await closeListener?.();
    closeListener = undefined;
    await service.close();
  }
  await boot();

  const transportNow = (who: Who): Transport => {
    const key = `${who.idInstance}/${who.apiTokenInstance}`;
    let t = current.get(key);
    if (!t) {
      t =
        kind === 'http'
          ? createHttpTransport({ apiUrl: url, ...who })
          : createInProcessTransport(service, who.idInstance, who.apiTokenInstance);
      current.set(key, t);
    }
    return t;
  };
  const transportFor = (who: Who): Transport => ({
    get description() {
      return transportNow(who).description;
    },
    async request(req) {
      const res = await held(clock, () => transportNow(who).request(req));
      requests.push({ method: req.method, body: req.body, status: res.statusCode, answer: res.body });
      return res;
    },
  });
  const clientWith = (token: string) =>
    createClient({
      ...A,
      apiTokenInstance: token,
      transport: transportFor({ ...A, apiTokenInstance: token }),
      rateLimit: false,
      retries: 0,
    });

  return {
    kind,
    clock,
    dir,
    get service() {
      return service;
    },
    get url() {
      if (kind !== 'http') throw new Error('startLocal: an in-process service has no URL');
      return url;
    },
    requests,
    client: clientWith(A.apiTokenInstance),
    clientWith,
    call(method, body, o = {}) {
      return transportFor(o.who ?? A).request({
        method,
        httpMethod: o.httpMethod ?? METHOD_SPECS[method].httpMethod,
        body,
        query: o.query,
        pathParams: o.pathParams,
        timeoutMs: 20_000,
        signal: o.signal,
        ...(o.upload ? { upload: o.upload } : {}),
      });
    },
    async admin(action, body, httpMethod = body === undefined ? 'GET' : 'POST') {
      const r = await service.handle({
        httpMethod,
        path: `/_local/waInstance${A.idInstance}/${action}/${A.apiTokenInstance}`,
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: r.body };
    },
    download: (fileUrl) => download(kind === 'http' ? url : service, fileUrl),
    transportFor,
    outcomes,
    settled(idMessage) {
      const known = outcomes.findLast((o) => o.idMessage === idMessage);
      if (known) return Promise.resolve(known.what);
      return new Promise((resolve) => waiters.set(idMessage, [...(waiters.get(idMessage) ?? []), resolve]));
    },
    async restart() {
      await shutdown();
      await boot();
    },
    async close() {
      await shutdown();
      if (ownDir) await rm(dir, { recursive: true, force: true });
    },
  };
}

async function download(
  via: string | LocalService,
  fileUrl: string,
): Promise<{ status: number; body: Buffer; headers: Record<string, string> }> {
  if (typeof via === 'string') {
    const res = await fetch(`${via}${new URL(fileUrl).pathname}`);
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: Object.fromEntries(res.headers) };
  }
  const r = await via.handle({ httpMethod: 'GET', path: new URL(fileUrl).pathname });
  const b = r.body as { kind?: string; stream?: NodeJS.ReadableStream };
  if (b && b.kind === 'file' && b.stream) {
    const chunks: Buffer[] = [];
    for await (const c of b.stream) chunks.push(Buffer.from(c as Buffer));
    return { status: r.status, body: Buffer.concat(chunks), headers: r.headers };
  }
  return { status: r.status, body: Buffer.from(JSON.stringify(r.body)), headers: r.headers };
}

/**
 * A fresh service for each test of the enclosing describe (closed after it),
 * behind one stable handle the suite's tests use.
 *
 * @example
 * const h = useLocal(kind, () => ({ config: conformanceConfig() }));
 * it('...', async () => expect((await h.call('checkAccount', { phoneNumber: 1 })).statusCode).toBe(200));
 */
export function useLocal(
  kind: TransportKind,
  options: () => Omit<LocalOptions, 'kind' | 'clock'> = () => ({}),
): LocalUnderTest<ManualClock> {
  let current: LocalUnderTest<ManualClock> | undefined;
  beforeEach(async () => {
    current = await startLocal({ kind, ...options() });
  });
  afterEach(() => current?.close());
  return new Proxy({} as LocalUnderTest<ManualClock>, {
    get(_t, prop) {
      if (!current) throw new Error('useLocal: the service exists only inside a test');
      const v = (current as unknown as Record<PropertyKey, unknown>)[prop];
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(current) : v;
    },
  });
}

/**
 * Work a VirtualClock cannot see (a call answered by the service in this
 * process, over loopback HTTP or in-process; a file fetch) holds it, as
 * `msgflow test` does: time jumps only while everything waits on the clock.
 */
async function held<T>(clock: Clock, f: () => Promise<T>): Promise<T> {
  if (!(clock instanceof VirtualClock)) return f();
  const release = clock.hold();
  try {
    return await f();
  } finally {
    release();
  }
}

/** The service's default media store (config.dataDir/files), its fetches holding a VirtualClock. */
function heldMediaStore(config: LocalConfig, baseDir: string, clock: VirtualClock): MediaStore {
  const store = createMediaStore({
    dir: path.join(path.resolve(baseDir, config.dataDir), 'files'),
    clock,
    maxBytes: config.maxFileBytes,
    timeoutMs: config.fetchTimeoutMs,
    maxRedirects: config.maxRedirects,
    retentionMs: config.fileRetentionMs,
    allowPrivate: config.fetch.allowPrivate,
  });
  return { ...store, fetchAndStore: (input) => held(clock, () => store.fetchAndStore(input)) };
}

/** A file server for urlFile on 127.0.0.1:0 serving the one PDF the jobs' tests send, at /brochure.pdf. */
export async function startPdfServer(): Promise<FileServer> {
  return startFileServer({ '/brochure.pdf': { body: PDF, contentType: 'application/pdf' } });
}

const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');

/** Waits (real time, bounded) until instance A's send queue is empty. */
export async function drainQueue(l: LocalUnderTest, timeoutMs = 15_000): Promise<void> {
  await waitFor(
    'the send queue to drain',
    async () => ((await l.admin('queue')).body as { pending: unknown[] }).pending.length === 0,
    timeoutMs,
  );
}

/** A local service and a virtual clock that a file's tests start and that end with each test. */
export interface ClosedAfterEach {
  /** A VirtualClock (the constructor's arguments), started, stopped after the test. */
  virtualClock(...args: ConstructorParameters<typeof VirtualClock>): VirtualClock;
  /** {@link startLocal}, the service closed after the test. */
  local<C extends Clock>(opts: LocalOptions<C> & { clock: C }): Promise<LocalUnderTest<C>>;
}

/**
 * The local services and virtual clocks the tests of a file start, each closed (stopped)
 * after its test.
 *
 * @example const { local, virtualClock } = closedAfterEach(); ... const l = await local({ dir, clock: virtualClock(T0) });
 */
export function closedAfterEach(): ClosedAfterEach {
  const open: LocalUnderTest[] = [];
  const clocks: VirtualClock[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()));
    await Promise.all(clocks.splice(0).map((c) => c.stop()));
  });
  return {
    virtualClock(...args) {
      const clock = new VirtualClock(...args);
      clock.start();
      clocks.push(clock);
      return clock;
    },
    async local(opts) {
      const l = await startLocal(opts);
      open.push(l);
      return l;
    },
  };
}
