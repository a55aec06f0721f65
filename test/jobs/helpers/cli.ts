/**
 * End-to-end harness: a temp project with `msgflow serve` (the local service
 * over HTTP, own config) and a counting HTTP proxy in front of it, which the
 * project's `default` instance points at. `msgflow run`/`start` are spawned
 * as real child processes (`node --import tsx src/cli/main.ts`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeData } from './local.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const CLI = path.join(REPO, 'src/cli/main.ts');
/** The CLI entry and the commands these tests drive (the lead's CLI lands separately). */
/** tsx resolved from the repo: the children run in a temp project directory without node_modules. */
const TSX = import.meta.resolve('tsx');

export const cliExists = () => ['main.ts', 'commands/run.ts', 'commands/start.ts', 'commands/serve.ts'].every((f) => existsSync(path.join(REPO, 'src/cli', f)));

export interface Proc {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}

export function spawnCli(args: string[], cwd: string, env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, ['--import', TSX, CLI, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let buf = '';
  child.stdout!.on('data', (d) => (buf += d));
  child.stderr!.on('data', (d) => (buf += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, out: () => buf, exited };
}

export async function until<T>(what: string, f: () => T | Promise<T>, timeoutMs = 30_000, proc?: Proc): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${proc ? `\n--- output ---\n${proc.out()}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface Proxy {
  url: string;
  /** API method → request bodies that reached the service through the proxy, with the answer. */
  calls: { method: string; body: unknown; answer: string }[];
  close(): Promise<void>;
}

/** Forwards every request to `target` and records it. */
export async function startProxy(target: () => string): Promise<Proxy> {
  const calls: Proxy['calls'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const up = http.request(target() + req.url, { method: req.method, headers: req.headers }, (r) => {
        const out: Buffer[] = [];
        r.on('data', (c) => out.push(c));
        r.on('end', () => {
          const text = Buffer.concat(out).toString();
          const method = (req.url ?? '').split('/')[2] ?? '';
          let parsed: unknown;
          try {
            parsed = body.length ? JSON.parse(body.toString()) : undefined;
          } catch {
            parsed = body.toString();
          }
          calls.push({ method, body: parsed, answer: text });
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
    close: () => new Promise((r) => server.close(() => r())),
  };
}

export const E2E_ID = '1101000042';
export const E2E_TOKEN = 'e2e-jobs-token-456';

export async function writeProject(dir: string, o: { proxyUrl: string; local?: Record<string, unknown>; instance?: Record<string, unknown> }) {
  const inst = { checkAccountLimit: { numbers: 100, windowMinutes: 10, retryAfterSeconds: 7200 }, sendIntervalMs: 500, ...o.instance };
  await writeData(
    dir,
    'serve.yaml',
    `local:
  port: 0
  dataDir: .msgflow/local
  fetch: { allowPrivate: true }
  network:
    accounts:
      - { phone: 79001112233, username: "@alice", name: Alice }
      - { phone: 79002223344, username: "@bob", name: Bob }
      - { phone: 79003334455, name: Carol }
      - { phone: 79004445566, username: "@dave", name: Dave }
      - { phone: 79005550000, hidden: true }
      - { phone: 79006660001, name: Erin }
      - { phone: 79006660002, name: Frank }
    deliveredAfterMs: 200
    readAfterMs: 400
  instances:
    - idInstance: "${E2E_ID}"
      apiTokenInstance: "${E2E_TOKEN}"
      sendIntervalMs: ${inst.sendIntervalMs}
      rateLimits: { checkAccount: 0, getChatHistory: 0, lastOutgoingMessages: 0, getMessage: 0, sendFileByUrl: 0, addContact: 0, editContact: 0, deleteContact: 0 }
      checkAccountLimit: ${JSON.stringify(inst.checkAccountLimit)}
`,
  );
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

/** Starts `msgflow serve` on a free port and resolves its base URL. */
export async function startServe(dir: string): Promise<{ proc: Proc; url: string }> {
  const proc = spawnCli(['serve', '--config', 'serve.yaml'], dir);
  const url = await until('msgflow serve to listen', () => /listening on (http:\/\/[\d.:]+)/.exec(proc.out())?.[1], 30_000, proc);
  return { proc, url };
}

export function kill(p: Proc | undefined): Promise<unknown> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return Promise.resolve();
  p.child.kill('SIGKILL');
  return p.exited;
}
