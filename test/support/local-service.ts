/**
 * Starts msgflow's local service on 127.0.0.1:0 over a temp data dir and
 * gives an HTTP client for it, plus a transport that counts the requests
 * that actually went over the wire.
 */
import { createClient } from '../../src/client/client.js';
import { createHttpTransport } from '../../src/client/http-transport.js';
import type { Transport } from '../../src/client/transport.js';
import { LocalSchema } from '../../src/local/config.js';
import { createLocalService, type LocalService } from '../../src/local/service.js';
import type { InstanceApi } from '../../src/api/types.js';
import type { Clock } from '../../src/util/clock.js';
import { startFileServer, type FileServer } from './file-server.js';
import { network } from './network.js';
import { project, writeData } from './project.js';
import { waitFor } from './wait.js';
import { API_METHODS, type ApiMethod } from '../../src/api/methods.js';

export const ID = '1101000001';
export const TOKEN = 'jobs-test-token-123';

/** A temp project folder (test/support/project.ts). */
export const tempDir = async (prefix = 'msgflow-jobs-'): Promise<string> => project({}, prefix);
export { writeData };

export interface LocalUnderTest {
  service: LocalService;
  url: string;
  dir: string;
  /** Requests per API method that reached the HTTP server, with their bodies. */
  requests: { method: string; body: unknown; status: number; answer: unknown }[];
  client: InstanceApi & { close?(): Promise<void> };
  /** A client of the same instance with another token (counted in `requests` too). */
  clientWith(token: string): InstanceApi & { close?(): Promise<void> };
  close(): Promise<void>;
}

function countingTransport(http: Transport, requests: LocalUnderTest['requests']): Transport {
  return {
    description: http.description,
    async request(req) {
      const res = await http.request(req);
      requests.push({ method: req.method, body: req.body, status: res.statusCode, answer: res.body });
      return res;
    },
  };
}

export function localConfig(overrides: Record<string, unknown> = {}, instance: Record<string, unknown> = {}) {
  return LocalSchema.parse({
    port: 0,
    dataDir: 'local-data',
    fetch: { allowPrivate: true },
    network: network({ deliveredAfterMs: 200, readAfterMs: 400 }),
    instances: [{ idInstance: ID, apiTokenInstance: TOKEN, sendIntervalMs: 500, rateLimits: ratesOff(), ...instance }],
    ...overrides,
  });
}

/** Every method's local rate limit off (0): the tests measure the service, not its limiter. */
export function ratesOff(): Record<ApiMethod, number> {
  return Object.fromEntries(API_METHODS.map((m) => [m, 0])) as Record<ApiMethod, number>;
}

export async function startLocal(opts: { dir: string; clock: Clock; config?: ReturnType<typeof localConfig> }): Promise<LocalUnderTest> {
  const service = createLocalService(opts.config ?? localConfig(), { baseDir: opts.dir, clock: opts.clock });
  await service.start();
  const listener = await service.listen(0, '127.0.0.1');
  const requests: LocalUnderTest['requests'] = [];
  const http = createHttpTransport({ apiUrl: listener.url, idInstance: ID, apiTokenInstance: TOKEN });
  const counting = countingTransport(http, requests);
  const client = createClient({ idInstance: ID, apiTokenInstance: TOKEN, transport: counting, rateLimit: false, retries: 0 });
  const clientWith = (token: string) =>
    createClient({
      idInstance: ID,
      apiTokenInstance: token,
      rateLimit: false,
      retries: 0,
      transport: countingTransport(createHttpTransport({ apiUrl: listener.url, idInstance: ID, apiTokenInstance: token }), requests),
    });
  return {
    service,
    url: listener.url,
    dir: opts.dir,
    requests,
    client,
    clientWith,
    async close() {
      await service.close();
    },
  };
}

/** A file server for urlFile on 127.0.0.1:0 serving the one PDF the jobs' tests send, at /brochure.pdf. */
export async function startPdfServer(): Promise<FileServer> {
  return startFileServer({ '/brochure.pdf': { body: PDF, contentType: 'application/pdf' } });
}

const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');

/** Waits (real time, bounded) until the instance's send queue is empty. */
export async function drainQueue(l: LocalUnderTest, timeoutMs = 15_000): Promise<void> {
  await waitFor(
    'the send queue to drain',
    async () =>
      ((await (await fetch(`${l.url}/_local/waInstance${ID}/queue/${TOKEN}`)).json()) as { pending: unknown[] }).pending.length === 0,
    timeoutMs,
  );
}
