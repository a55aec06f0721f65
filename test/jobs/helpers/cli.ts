/**
 * End-to-end harness: a temp project with the local service over HTTP (what
 * `msgflow serve` runs, own config) and a counting HTTP proxy in front of it,
 * which the project's `default` instance points at. `msgflow run`/`start`
 * run in-process, or as processes where a kill -9 is the subject.
 */
import http from 'node:http';
import { networkYaml, type NetworkTiming } from '../../support/network.js';
import { writeData } from '../../support/project.js';
import { serveCommand, type ServeHandle } from '../../../src/runtime/serve.js';

export interface Proxy {
  url: string;
  /** API method → request bodies that reached the service through the proxy, with the answer. */
  calls: { method: string; body: unknown; answer: string }[];
  /** Requests `hold` kept back: in flight for their sender, not at the service. */
  held: { method: string; body: unknown }[];
  /** Lets the held requests go on to the service (`forward`), or drops them: they never reach it. */
  releaseHeld(forward: boolean): Promise<void>;
  close(): Promise<void>;
}

function parseBody(body: Buffer): unknown {
  try {
    return body.length ? JSON.parse(body.toString()) : undefined;
  } catch {
    return body.toString();
  }
}

/**
 * Forwards every request to `target` and records it. `hold(method, body)`
 * true keeps a request back (the sender waits for its answer) until
 * releaseHeld: how a test catches a send in flight.
 */
export async function startProxy(target: () => string, o: { hold?: (method: string, body: unknown) => boolean } = {}): Promise<Proxy> {
  const calls: Proxy['calls'] = [];
  const held: Array<{ method: string; body: unknown; go: (forward: boolean) => Promise<void> }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const method = (req.url ?? '').split('/')[2] ?? '';
      if (o.hold?.(method, parseBody(body))) {
        held.push({
          method,
          body: parseBody(body),
          go: async (forward) => {
            if (!forward) return void res.destroy();
            // The sender may be gone: the service gets the request all the same.
            await new Promise<void>((resolve) => {
              const up = http.request(target() + req.url, { method: req.method, headers: req.headers }, (r) => {
                r.resume();
                r.on('end', () => resolve());
              });
              up.on('error', () => resolve());
              up.end(body);
            });
            res.destroy();
          },
        });
        return;
      }
      const up = http.request(target() + req.url, { method: req.method, headers: req.headers }, (r) => {
        const out: Buffer[] = [];
        r.on('data', (c) => out.push(c));
        r.on('end', () => {
          const text = Buffer.concat(out).toString();
          calls.push({ method, body: parseBody(body), answer: text });
          res.writeHead(r.statusCode ?? 502, r.headers);
          res.end(text);
        });
      });
      up.on('error', () => {
        res.writeHead(502);
        res.end();
      });
      up.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    calls,
    held,
    async releaseHeld(forward) {
      for (const h of held.splice(0)) await h.go(forward);
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}

export const E2E_ID = '1101000042';
export const E2E_TOKEN = 'e2e-jobs-token-456';

/** An instance of serve.yaml: E2E_TOKEN, every call unlimited, a checkAccount window. */
export interface ServeInstance {
  id: string;
  /** @default 500 */
  sendIntervalMs?: number;
  /** @default 100 numbers per 10 minutes, then a 2-hour pause */
  checkAccountLimit?: Record<string, number>;
}

/** serve.yaml for `msgflow serve` (port 0, data under .msgflow/local) with these instances. */
export function serveYaml(instances: ServeInstance[], network: NetworkTiming = { deliveredAfterMs: 200, readAfterMs: 400 }): string {
  const entries = instances.map((o) => {
    const inst = { checkAccountLimit: { numbers: 100, windowMinutes: 10, retryAfterSeconds: 7200 }, sendIntervalMs: 500, ...o };
    return `    - idInstance: "${inst.id}"
      apiTokenInstance: "${E2E_TOKEN}"
      sendIntervalMs: ${inst.sendIntervalMs}
      rateLimits: { checkAccount: 0, getChatHistory: 0, lastOutgoingMessages: 0, getMessage: 0, sendFileByUrl: 0, addContact: 0, editContact: 0, deleteContact: 0 }
      checkAccountLimit: ${JSON.stringify(inst.checkAccountLimit)}
`;
  });
  return `local:
  port: 0
  dataDir: .msgflow/local
  fetch: { allowPrivate: true }
${networkYaml('  ', network)}
  instances:
${entries.join('')}`;
}

export async function writeProject(
  dir: string,
  o: { proxyUrl: string; local?: Record<string, unknown>; instance?: Record<string, unknown>; network?: NetworkTiming },
) {
  await writeData(dir, 'serve.yaml', serveYaml([{ id: E2E_ID, ...o.instance }], o.network));
  await writeData(
    dir,
    'config.yaml',
    `instances:
  default:
    apiUrl: ${o.proxyUrl}
    idInstance: "${E2E_ID}"
    apiTokenInstance: "${E2E_TOKEN}"
    rateLimit: false
flowsDir: flows
store:
  driver: lowdb
  dir: .msgflow/state
`,
  );
}

/** `msgflow serve --config serve.yaml` in this process (the local service over real HTTP on a free port). */
export async function startServe(dir: string): Promise<ServeHandle & { output: string[] }> {
  const output: string[] = [];
  const quiet = (l: string) => void output.push(l);
  const logger = { debug: quiet, info: quiet, warn: quiet, error: quiet };
  const handle = await serveCommand({ config: 'serve.yaml', cwd: dir, port: 0, print: quiet, logger });
  return { ...handle, output };
}
