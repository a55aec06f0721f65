/**
 * The proofs, end to end: `msgflow run` (and `msgflow start` to
 * resume) as child processes against `msgflow serve` over HTTP, through a
 * proxy that counts what reached the service.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFileServer, tempDir, writeData } from '../helpers/local.js';
import { E2E_ID, E2E_TOKEN, cliExists, kill, spawnCli, startProxy, startServe, until, writeProject, type Proc, type Proxy } from '../helpers/cli.js';

let procs: Proc[] = [];
let proxies: Proxy[] = [];
let files: { url: string; close(): Promise<void> };
beforeAll(async () => void (files = await startFileServer()));
afterAll(() => files.close());
afterEach(async () => {
  await Promise.all(procs.map(kill));
  await Promise.all(proxies.map((p) => p.close()));
  procs = [];
  proxies = [];
});

async function project(instance?: Record<string, unknown>) {
  const dir = await tempDir('msgflow-e2e-');
  let serveUrl = '';
  const proxy = await startProxy(() => serveUrl);
  proxies.push(proxy);
  await writeProject(dir, { proxyUrl: proxy.url, instance });
  const serve = await startServe(dir);
  procs.push(serve.proc);
  serveUrl = serve.url;
  const run = (...args: string[]) => {
    const p = spawnCli([...args, '--config', 'config.yaml'], dir);
    procs.push(p);
    return p;
  };
  const admin = async (what: string, body?: unknown) => {
    const res = await fetch(`${serve.url}/_local/waInstance${E2E_ID}/${what}/${E2E_TOKEN}`, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return res.json() as Promise<any>;
  };
  const api = async (method: string, body: unknown) => {
    const res = await fetch(`${serve.url}/waInstance${E2E_ID}/${method}/${E2E_TOKEN}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return res.json() as Promise<any>;
  };
  return { dir, proxy, serve, run, admin, api };
}

/** Runs to the end; resolves the output, failing with it on a non-zero exit. */
async function finish(p: Proc, timeoutMs = 60_000) {
  const code = await Promise.race([p.exited, new Promise((r) => setTimeout(() => r('timeout'), timeoutMs))]);
  expect(code, p.out()).toBe(0);
  return p.out();
}

const lineCount = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trimEnd().split('\r\n').length : 0);

/** `msgflow start` resumes the unfinished run; stopped once the report is written (with `rows` rows, when given). */
async function resumeWithStart(ctx: Awaited<ReturnType<typeof project>>, report: string, timeoutMs = 60_000, rows?: number) {
  const start = ctx.run('start', '--no-listen');
  const file = path.join(ctx.dir, report);
  await until(`${report} after resume`, () => (rows === undefined ? existsSync(file) : lineCount(file) >= rows + 1), timeoutMs, start);
  await new Promise((r) => setTimeout(r, 200));
  start.child.kill('SIGTERM');
  await start.exited;
  return start.out();
}

describe.skipIf(!cliExists())('the four jobs end to end (msgflow run against msgflow serve)', () => {
  it('checkAccount.bulk: hits rate_limit_exceeded, pauses, survives kill -9 during the pause, finishes without re-checking any number', async () => {
    const ctx = await project({ checkAccountLimit: { numbers: 3, windowMinutes: 10, retryAfterSeconds: 3 } });
    await writeData(ctx.dir, 'data/leads.csv', 'phone\n+7 900 111-22-33\n79002223344\n79009990001\n79003334455\n79005550000\n79009990002\nbad\n79002223344\n');
    await writeData(
      ctx.dir,
      'flows/check.yaml',
      `name: check
inputs:
  leads: { file: data/leads.csv }
steps:
  - id: check
    uses: checkAccount.bulk
    with: { items: "\${{ inputs.leads }}", pause: 1s, pace: { delay: 0, jitter: 0 }, report: reports/check.csv }
`,
    );
    const first = ctx.run('run', 'check');
    await until('rate_limit_exceeded', () => ctx.proxy.calls.some((c) => c.answer.includes('rate_limit_exceeded')), 30_000, first);
    await new Promise((r) => setTimeout(r, 300)); // the pause is persisted and the run is waiting
    await kill(first);
    // #10: the report is written as records finish: the killed run's holds what it finished
    const killedAt = lineCount(path.join(ctx.dir, 'reports/check.csv'));
    expect(killedAt).toBeGreaterThanOrEqual(1 + 3);
    expect(killedAt).toBeLessThan(1 + 7);

    await resumeWithStart(ctx, 'reports/check.csv', 60_000, 7);
    const ok = ctx.proxy.calls.filter((c) => c.method === 'checkAccount' && !c.answer.includes('rate_limit_exceeded'));
    const perNumber = new Map<number, number>();
    for (const c of ok) perNumber.set((c.body as { phoneNumber: number }).phoneNumber, (perNumber.get((c.body as { phoneNumber: number }).phoneNumber) ?? 0) + 1);
    expect([...perNumber.keys()].sort()).toEqual([79001112233, 79002223344, 79003334455, 79005550000, 79009990001, 79009990002]);
    expect([...perNumber.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    const csv = await readFile(path.join(ctx.dir, 'reports/check.csv'), 'utf8');
    expect(csv.match(/,exists,/g)).toHaveLength(3);
    expect(csv.match(/,none,/g)).toHaveLength(3);
    expect(csv.match(/,invalid,/g)).toHaveLength(1);
  }, 90_000);

  it('contacts.import: upsert twice gives the same state', async () => {
    const ctx = await project();
    await writeData(ctx.dir, 'data/contacts.csv', 'phone,firstName,lastName\n79001112233,Alice,A\n79002223344,Bob,B\n79009990001,Nobody,N\nxx,Bad,Row\n');
    await writeData(
      ctx.dir,
      'flows/import.yaml',
      `name: import
steps:
  - id: import
    uses: contacts.import
    with: { file: data/contacts.csv, pace: { delay: 0 }, report: reports/import.json }
`,
    );
    await finish(ctx.run('run', 'import'));
    const strip = (s: any) => JSON.stringify(s, (k, v) => (k === 'updatedAt' || k === 'createdAt' ? undefined : v));
    const state1 = strip(await ctx.admin('contacts'));
    const r1 = JSON.parse(await readFile(path.join(ctx.dir, 'reports/import.json'), 'utf8'));
    expect(r1.summary).toMatchObject({ added: 2, notOnMessenger: 1, invalid: 1 });
    await finish(ctx.run('run', 'import'));
    expect(strip(await ctx.admin('contacts'))).toBe(state1);
    const r2 = JSON.parse(await readFile(path.join(ctx.dir, 'reports/import.json'), 'utf8'));
    expect(r2.summary).toMatchObject({ added: 0, updated: 2, notOnMessenger: 1, invalid: 1 });
  });

  it('outgoing.audit: the second audit shows the trend against the first', async () => {
    const ctx = await project();
    const now = Math.floor(Date.now() / 1000);
    const out = (chatId: string, ago: number, statusMessage: string) =>
      ctx.admin('incoming', { type: 'outgoing', chatId, typeMessage: 'documentMessage', fileName: 'a.pdf', timestamp: now - ago, sendByApi: true, statusMessage });
    await out('79001112233@c.us', 1200, 'sent');
    await out('79002223344@c.us', 1200, 'read');
    await writeData(
      ctx.dir,
      'flows/audit.yaml',
      `name: audit
steps:
  - id: audit
    uses: outgoing.audit
    with: { minutes: 60, notDeliveredAfter: 10m, thresholds: { notDelivered: 2 }, report: reports/audit.json }
`,
    );
    await finish(ctx.run('run', 'audit'));
    const a1 = JSON.parse(await readFile(path.join(ctx.dir, 'reports/audit.json'), 'utf8'));
    expect(a1.summary).toMatchObject({ total: 2, notDelivered: 1, trend: null });
    await out('79003334455@c.us', 900, 'sent');
    await out('79004445566@c.us', 30, 'delivered');
    await finish(ctx.run('run', 'audit'));
    const a2 = JSON.parse(await readFile(path.join(ctx.dir, 'reports/audit.json'), 'utf8'));
    expect(a2.summary).toMatchObject({ total: 4, notDelivered: 2, trend: { total: 2, notDelivered: 1 } });
    expect(a2.summary.thresholdsCrossed).toEqual([{ metric: 'notDelivered', value: 2, threshold: 2, direction: 'above' }]);
  });

  it('files.broadcast: killed with kill -9 mid-way, resumed, every recipient sent exactly once', async () => {
    const ctx = await project({ sendIntervalMs: 500 });
    const phones = [79001112233, 79002223344, 79003334455, 79004445566, 79006660001, 79006660002];
    await writeData(ctx.dir, 'data/recipients.csv', 'phone,firstName\n' + phones.map((p, i) => `${p},Friend${i}`).join('\n') + '\n');
    await writeData(
      ctx.dir,
      'flows/broadcast.yaml',
      `name: broadcast
inputs:
  recipients: { file: data/recipients.csv }
steps:
  - id: send
    uses: files.broadcast
    with:
      recipients: \${{ inputs.recipients }}
      urlFile: ${files.url}/brochure.pdf
      fileName: brochure.pdf
      caption: "Hello \${{ item.firstName }}"
      pace: { delay: 300ms }
      reconcile: { sendInterval: 500ms, grace: 2s, clockSkew: 2s }
      follow: { deadline: 3s, poll: 250ms, until: read }
      report: reports/broadcast.csv
`,
    );
    const first = ctx.run('run', 'broadcast');
    await until('three sends', () => ctx.proxy.calls.filter((c) => c.method === 'sendFileByUrl').length >= 3, 20_000, first);
    await kill(first);
    await resumeWithStart(ctx, 'reports/broadcast.csv');

    await until('the send queue to drain', async () => (await ctx.admin('queue')).pending.length === 0, 20_000);
    for (const [i, phone] of phones.entries()) {
      const history = (await ctx.api('getChatHistory', { chatId: `${phone}@c.us` })) as any[];
      const files = history.filter((m) => m.type === 'outgoing' && m.typeMessage === 'documentMessage');
      expect(files.map((m) => m.caption), `${phone}`).toEqual([`Hello Friend${i}`]);
    }
    const csv = await readFile(path.join(ctx.dir, 'reports/broadcast.csv'), 'utf8');
    expect(csv.match(/,sent,/g)).toHaveLength(6);
  }, 90_000);
});
