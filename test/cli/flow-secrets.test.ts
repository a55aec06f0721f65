/**
 * `${{ secrets.NAME }}`: values from the environment, a .env-style file and a
 * directory of one file per secret reach the request that needs them, and
 * never any output of the run: what the CLI prints, the store's files on
 * disk, what later commands print from the store, the dashboard's API and
 * pages, /metrics. validate names a missing secret with file:line:col.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { createUiServer } from '../../src/ui/server.js';
import { cli } from '../support/cli.js';
import { project, remoteConfig } from '../support/project.js';

const CRM_TOKEN = 'crm-tok-7d1f3a9b55'; // from the .env file
const API_KEY = 'apikey-02c4e8f1aa'; // from the secrets directory
const HOOK_SECRET = 'hook-sec-91b2c7d0'; // from the environment

const servers: Server[] = [];
const dirs: string[] = [];
afterEach(async () => {
  delete process.env.HOOK_SECRET;
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A CRM that echoes what it received (headers, query, body), and answers 400 under /fail. */
async function echoServer(): Promise<{ url: string; seen: { url: string; headers: Record<string, unknown>; body: string }[] }> {
  const seen: { url: string; headers: Record<string, unknown>; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      seen.push({ url: req.url!, headers: req.headers, body });
      res.writeHead(req.url!.startsWith('/fail') ? 400 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ url: req.url, authorization: req.headers.authorization, hook: req.headers['x-hook'], body }));
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const FLOW = (server: string) => `name: crm-sync
steps:
  - id: post
    uses: http.request
    with:
      method: POST
      url: ${server}/hook?key=\${{ secrets.API_KEY }}
      headers:
        Authorization: Bearer \${{ secrets.CRM_TOKEN }}
        X-Hook: \${{ secrets.HOOK_SECRET }}
      json: { note: "signed \${{ secrets.CRM_TOKEN }}" }
      allowPrivate: true
  - id: say
    uses: log
    with: { message: "token \${{ secrets.CRM_TOKEN }} got \${{ steps.post.output.text }}" }
  - id: fail
    uses: http.request
    with: { url: "${server}/fail/\${{ secrets.API_KEY }}", allowPrivate: true, retry: { attempts: 1 } }
`;

/** A project whose secrets live outside it: a .env file and a secrets directory. */
function secretProject(flow: string): { dir: string; outside: string } {
  const outside = project({ 'bot.env': `# CRM\nCRM_TOKEN=${CRM_TOKEN}\n`, 'run-secrets/API_KEY': `${API_KEY}\n` }, 'msgflow-secret-store-');
  const config = remoteConfig(
    'tok-secrets-test-1',
    `secrets:\n  file: ${path.join(outside, 'bot.env')}\n  dir: ${path.join(outside, 'run-secrets')}\n`,
  );
  const dir = project({ 'config.yaml': config, 'flows/crm-sync.yaml': flow }, 'msgflow-secrets-run-');
  dirs.push(dir, outside);
  return { dir, outside };
}

/** Every file under `dir`, as text. */
function allFiles(dir: string): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...allFiles(p));
    else out.push({ file: p, text: readFileSync(p, 'latin1') });
  }
  return out;
}

function expectNoSecret(where: string, text: string): void {
  for (const value of [CRM_TOKEN, API_KEY, HOOK_SECRET, encodeURIComponent(API_KEY)]) {
    if (text.includes(value)) throw new Error(`${where} holds a secret's value (${value.slice(0, 6)}…)`);
  }
}

describe('secrets in flows', () => {
  it('reach the request from env, .env file and secrets dir, and appear in no output of the run', async () => {
    const srv = await echoServer();
    const { dir } = secretProject(FLOW(srv.url));
    process.env.HOOK_SECRET = HOOK_SECRET;

    const run = await cli(['run', 'crm-sync'], dir);
    expect(run.code).not.toBe(0); // the last step's 400 fails the run, its error kept
    // The secrets worked: the CRM received each one.
    expect(srv.seen[0]!.url).toBe(`/hook?key=${API_KEY}`);
    expect(srv.seen[0]!.headers).toMatchObject({ authorization: `Bearer ${CRM_TOKEN}`, 'x-hook': HOOK_SECRET });
    expect(JSON.parse(srv.seen[0]!.body)).toEqual({ note: `signed ${CRM_TOKEN}` });
    expect(srv.seen[1]!.url).toBe(`/fail/${API_KEY}`);
    // What the run printed names them by placeholder only.
    expectNoSecret('msgflow run output', run.stdout + run.stderr);
    expect(run.stderr).toContain('token <SECRET:CRM_TOKEN> got');
    expect(run.stderr).toContain('answered HTTP 400');

    // Later commands print from the store: it never held a value.
    const runs = await cli(['runs'], dir);
    const id = /crm-sync-[\w-]+/.exec(runs.stdout)![0];
    const show = await cli(['runs', 'show', id], dir);
    expect(show.stdout + show.stderr).toContain('<SECRET:CRM_TOKEN>');
    for (const [what, r] of [
      ['runs', runs],
      ['runs show', show],
    ] as const)
      expectNoSecret(`msgflow ${what} output`, r.stdout + r.stderr);
    for (const f of allFiles(dir)) if (!f.file.endsWith('config.yaml')) expectNoSecret(f.file, f.text);

    // The dashboard of another process, over HTTP: its API, its page, its metrics.
    const runtime = await createRuntime({ config: loadConfig(path.join(dir, 'config.yaml')), command: 'ui' });
    const ui = await createUiServer({ runtime, port: 0, probeLocal: false });
    try {
      for (const p of ['/', '/api/runs', `/api/runs/${id}`, '/api/flows', '/metrics']) {
        const res = await fetch(`${ui.url}${p}`);
        expect(res.status, p).toBe(200);
        expectNoSecret(`dashboard ${p}`, await res.text());
      }
      const detail = (await (await fetch(`${ui.url}/api/runs/${id}`)).json()) as Record<string, unknown>;
      expect(JSON.stringify(detail)).toContain('<SECRET:');
    } finally {
      await ui.close();
      await runtime.close();
    }
  });

  it('validate names a secret no source has with file:line:col, and where it looked', async () => {
    const { dir } = secretProject(
      `name: crm-sync\nsteps:\n  - id: post\n    uses: http.request\n    with:\n      url: "https://crm.example/\${{ secrets.NOPE_TOKEN }}"\n`,
    );
    const r = await cli(['validate'], dir);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(
      /flows\/crm-sync\.yaml:6:\d+ steps\[0\]\.with\.url: secret NOPE_TOKEN is not set \(looked in the environment, secrets\.file .*bot\.env, secrets\.dir .*run-secrets\)/,
    );
  });

  it('config.yaml reads ${{ secrets.NAME }} too, and names a missing one with its position', async () => {
    const { dir, outside } = secretProject(FLOW('http://127.0.0.1:9'));
    const file = path.join(dir, 'config.yaml');
    mkdirSync(path.join(outside, 'run-secrets'), { recursive: true });
    writeFileSync(path.join(outside, 'run-secrets', 'GREEN_TOKEN'), 'green-token-from-dir\n');
    const text = readFileSync(file, 'utf8').replace('apiTokenInstance: tok-secrets-test-1', 'apiTokenInstance: ${{ secrets.GREEN_TOKEN }}');
    writeFileSync(file, text);
    expect(loadConfig(file).instances.default!.apiTokenInstance).toBe('green-token-from-dir');
    writeFileSync(file, text.replace('GREEN_TOKEN', 'MISSING_TOKEN'));
    expect(() => loadConfig(file)).toThrow(/config\.yaml:5:\d+ instances\.default\.apiTokenInstance: secret MISSING_TOKEN is not set/);
  });
});
