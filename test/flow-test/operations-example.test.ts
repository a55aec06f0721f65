/**
 * The operations example of docs/operations.md (examples/operations), run
 * as written by a daemon: crm-sync posts to a CRM with a secret token; when
 * the CRM refuses, its on-failure step and the tell-operator failure flow
 * each message the operator's chat once; a schedule missed while msgflow was
 * down reaches the alert webhook; validate passes the example; the docs page
 * shows each example file as it is.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDaemon } from '../../src/index.js';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';

const EXAMPLE = path.resolve(import.meta.dirname, '../../examples/operations');
const TOKEN = 'crm-example-token-5e1c';
const ENV = ['CRM_URL', 'CRM_ON_LAN', 'CRM_TOKEN', 'ALERT_URL', 'ALERT_ON_LAN', 'ALERT_HOOK_KEY', 'MSGFLOW_SECRETS_FILE'];

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const k of ENV) delete process.env[k];
});

/** The CRM (answers `crmStatus` to /api/leads) and the alert webhook (/hook), recording what they receive. */
async function servers(crmStatus: number) {
  const seen: { url: string; auth?: string; body: string }[] = [];
  const s: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      seen.push({ url: req.url!, auth: req.headers.authorization, body });
      res.writeHead(req.url === '/api/leads' ? crmStatus : 200, { 'content-type': 'application/json' });
      res.end('{"id":"L-7"}');
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    s.closeAllConnections();
    return new Promise((r) => s.close(r));
  });
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  Object.assign(process.env, {
    CRM_URL: url,
    CRM_ON_LAN: 'true',
    CRM_TOKEN: TOKEN,
    ALERT_URL: `${url}/hook`,
    ALERT_ON_LAN: 'true',
    ALERT_HOOK_KEY: 'hook-key-example-1',
    MSGFLOW_SECRETS_FILE: path.join(tmpdir(), 'no-such-secrets.env'),
  });
  return { url, seen };
}

function exampleCopy(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-ops-example-'));
  cpSync(EXAMPLE, dir, { recursive: true });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('the operations example', () => {
  it('validates as written', async () => {
    await servers(200);
    const r = await cli(['validate'], exampleCopy());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it("messages the operator's chat when the CRM refuses, from the step's on-failure and from the failure flow", async () => {
    const srv = await servers(422);
    const dir = exampleCopy();
    const daemon = createDaemon({ config: path.join(dir, 'config.yaml'), listen: false, ui: false });
    cleanups.push(() => daemon.stop());
    await daemon.start();
    const run = await (await daemon.client.start('crm-sync')).done;
    expect(run.status).toBe('failed');
    // One attempt (a 422 is final), with the secret.
    expect(srv.seen.filter((s) => s.url === '/api/leads').map((s) => s.auth)).toEqual([`Bearer ${TOKEN}`]);
    const steps = await daemon.runtime.engine.getSteps(run.id);
    expect(steps.find((s) => s.step === 'tell_operator')).toMatchObject({ status: 'succeeded' });
    const engine = daemon.runtime.engine;
    const told = async () => (await engine.listRuns({ flow: 'tell-operator' })).filter((r) => r.status === 'succeeded');
    await waitFor('the failure flow to tell the operator', async () => (await told()).length === 1);
    const [tell] = await told();
    const out = (await engine.getSteps(tell!.id))[0]!.output as { idMessage: string };
    expect(out.idMessage).toEqual(expect.any(String));
    expect(tell!.trigger).toBe('alert');

    // A schedule missed while msgflow was down (what the scheduler reports on start) reaches the webhook.
    daemon.bus.emit('schedule:missed', {
      flow: 'crm-sync',
      scheduledAt: Date.parse('2026-01-05T09:00:00Z'),
      policy: 'none',
      willRun: false,
    });
    await waitFor('the alert webhook', () => srv.seen.some((s) => s.url === '/hook'));
    expect(JSON.parse(srv.seen.find((s) => s.url === '/hook')!.body)).toMatchObject({ kind: 'schedule-missed', subject: 'crm-sync' });
  });

  it('docs/operations.md shows each example file as it is', () => {
    const doc = readFileSync(path.resolve(EXAMPLE, '../../docs/operations.md'), 'utf8');
    for (const f of ['config.yaml', ...readdirSync(path.join(EXAMPLE, 'flows')).map((n) => `flows/${n}`)]) {
      expect(doc, f).toContain(readFileSync(path.join(EXAMPLE, f), 'utf8').trim());
    }
  });
});
