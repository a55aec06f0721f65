/**
 * The bulk jobs end to end: `msgflow run` (and `msgflow start` to
 * resume) against the local service over HTTP (what `msgflow serve` runs),
 * through a proxy that counts what reached the service. In-process through
 * runCli, except the runs killed with kill -9 and the daemon that resumes
 * them: those are processes (the kill is the subject).
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { createLowdbStore } from '../../../src/store/lowdb-store.js';
import { cli } from '../../support/cli.js';
import { project as tempProject, writeData } from '../../support/project.js';
import { spawnCli, type Proc } from '../../support/spawn.js';
import { waitFor } from '../../support/wait.js';
import { startPdfServer } from '../../support/local-service.js';
import type { FileServer } from '../../support/file-server.js';
import type { NetworkTiming } from '../../support/network.js';
import { E2E_ID, E2E_TOKEN, startProxy, startServe, writeProject, type Proxy } from '../helpers/cli.js';

let files: FileServer;
beforeAll(async () => void (files = await startPdfServer()));
afterAll(() => files.close());

/** A project with its own proxy and serve, closed when the test `t` ends (the kill tests run side by side). */
async function project(
  t: TestContext,
  instance?: Record<string, unknown>,
  network?: NetworkTiming,
  hold?: (method: string, body: unknown) => boolean,
) {
  const cleanups: Array<() => Promise<unknown>> = [];
  t.onTestFinished(async () => {
    for (const c of cleanups.splice(0)) await c();
  });
  const dir = tempProject({}, 'msgflow-e2e-');
  let serveUrl = '';
  const proxy: Proxy = await startProxy(() => serveUrl, { hold });
  cleanups.push(() => proxy.close());
  await writeProject(dir, { proxyUrl: proxy.url, instance, network });
  const serve = await startServe(dir);
  cleanups.push(() => serve.close());
  serveUrl = serve.url;
  /** `msgflow ARGS` as a process (for a kill -9). */
  const spawn = (...args: string[]) => {
    const p = spawnCli(args, dir);
    cleanups.push(() => p.kill());
    return p;
  };
  /** `msgflow ARGS` in this process, to its end; fails with its output on a non-zero exit. */
  const run = async (...args: string[]) => {
    const r = await cli(args, dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    return r;
  };
  const admin = async (what: string, body?: unknown) => {
    const res = await fetch(
      `${serve.url}/_local/waInstance${E2E_ID}/${what}/${E2E_TOKEN}`,
      body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
    );
    return res.json() as Promise<any>;
  };
  const api = async (method: string, body: unknown) => {
    const res = await fetch(`${serve.url}/waInstance${E2E_ID}/${method}/${E2E_TOKEN}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return res.json() as Promise<any>;
  };
  return { dir, proxy, serve, spawn, run, admin, api };
}

/** In-flight kill trials: `npm run trials` runs 20 (MSGFLOW_TRIALS), one of each kind by default. */
const TRIALS = Number(process.env.MSGFLOW_TRIALS ?? 2);

/**
 * One broadcast to 6 recipients whose 3rd send is held by the proxy (in
 * flight) when `msgflow run` is killed with kill -9; the held request then
 * reaches the service (`reaches`) or never does. `msgflow run` again resumes
 * it. Resolves `ok …` when every recipient has exactly one message and the
 * summary says what happened, else what went wrong.
 */
async function inFlightTrial(t: TestContext, reaches: boolean, job: 'files' | 'messages' = 'files'): Promise<string> {
  const phones = [79001112233, 79002223344, 79003334455, 79004445566, 79006660001, 79006660002];
  let sends = 0;
  const sending = (method: string) => (job === 'files' ? method === 'sendFileByUrl' : method === 'sendMessage' || method === 'sendPoll');
  const ctx = await project(t, { sendIntervalMs: 500 }, undefined, (method) => sending(method) && ++sends === 3);
  await writeData(ctx.dir, 'data/recipients.csv', 'phone,firstName\n' + phones.map((p, i) => `${p},Friend${i}`).join('\n') + '\n');
  // messages.broadcast: a text or a poll per recipient (A/B), its content looked for by kind.
  const what =
    job === 'files'
      ? `uses: files.broadcast
    with:
      urlFile: ${files.url('/brochure.pdf')}
      fileName: brochure.pdf
      caption: "Hello \${{ item.firstName }}"`
      : `uses: messages.broadcast
    with:
      variants:
        - { name: text, message: { text: "Hello \${{ row.firstName }}" } }
        - { name: poll, message: { poll: { question: "Coffee, \${{ row.firstName }}?", options: [yes, no] } } }`;
  await writeData(
    ctx.dir,
    'flows/broadcast.yaml',
    `name: broadcast
inputs:
  recipients: { file: data/recipients.csv }
steps:
  - id: send
    ${what}
      recipients: \${{ inputs.recipients }}
      reconcile: { sendInterval: 500ms, grace: 1s, clockSkew: 2s, journalLag: 1s }
      follow: { deadline: 0 }
      report: reports/broadcast.csv
`,
  );
  const first = ctx.spawn('run', 'broadcast');
  await waitFor('the third send in flight', () => ctx.proxy.held.length === 1, { context: first.output, intervalMs: 5 });
  await first.kill();
  await ctx.proxy.releaseHeld(reaches);
  const again = await ctx.run('run', 'broadcast');
  const per = new Map<string, number>();
  // lastOutgoingMessages lists the messages still queued too.
  const outgoing = await fetch(`${ctx.serve.url}/waInstance${E2E_ID}/lastOutgoingMessages/${E2E_TOKEN}?minutes=60`);
  for (const m of (await outgoing.json()) as { chatId: string }[]) per.set(m.chatId, (per.get(m.chatId) ?? 0) + 1);
  const counts = phones.map((p) => per.get(`${p}@c.us`) ?? 0);
  const csv = await readFile(path.join(ctx.dir, 'reports/broadcast.csv'), 'utf8');
  const resent = (csv.match(/never reached the service; sent again/g) ?? []).length;
  const expected = reaches ? 0 : 1;
  const lines = csv.split('\r\n');
  const outcome = lines[0]!.split(',').indexOf('outcome');
  const sentRows = lines.filter((l) => l.split(',')[outcome] === 'sent').length;
  if (!again.stderr.includes('resuming run') || counts.some((c) => c !== 1) || sentRows !== 6 || resent !== expected)
    return `${reaches ? 'reached' : 'dropped'}: messages per recipient ${counts.join(',')}, ${sentRows} sent, resent ${resent}\n${again.stdout}${again.stderr}`;
  return `ok (${reaches ? 'reached: found' : 'dropped: sent again'})`;
}

const lineCount = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trimEnd().split('\r\n').length : 0);

/** The project's one run, as the store holds it. */
async function theRun(dir: string) {
  const store = createLowdbStore({ dir: path.join(dir, '.msgflow/state') });
  try {
    const [run] = await store.listRuns();
    return run && { run, waits: await store.listWaits(run.id) };
  } finally {
    await store.close();
  }
}

/** `msgflow start` (a process) resumes the unfinished run; stopped once the run has ended. */
async function resumeWithStart(ctx: Awaited<ReturnType<typeof project>>, timeoutMs = 120_000) {
  const start: Proc = ctx.spawn('start', '--no-listen', '--no-ui');
  await waitFor('the resumed run to end', async () => ['succeeded', 'failed'].includes((await theRun(ctx.dir))?.run.status ?? ''), {
    timeoutMs,
    context: start.output,
  });
  start.child.kill('SIGTERM');
  expect(await start.exited, start.output()).toBe(0);
  return start.output();
}

describe('the four jobs end to end (msgflow run against msgflow serve)', () => {
  // The two kill -9 scenarios run side by side: each mostly waits (a pause, the send queue) on its own project.
  it.concurrent(
    'checkAccount.bulk: hits rate_limit_exceeded, pauses, survives kill -9 during the pause, finishes without re-checking any number',
    async (t) => {
      // The service asks for 2 s: time for the kill to land in the pause, not much more to wait out on resume.
      const ctx = await project(t, { checkAccountLimit: { numbers: 3, windowMinutes: 10, retryAfterSeconds: 2 } });
      await writeData(
        ctx.dir,
        'data/leads.csv',
        'phone\n+7 900 111-22-33\n79002223344\n79009990001\n79003334455\n79005550000\n79009990002\nbad\n79002223344\n',
      );
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
      const first = ctx.spawn('run', 'check');
      await waitFor('rate_limit_exceeded', () => ctx.proxy.calls.some((c) => c.answer.includes('rate_limit_exceeded')), {
        context: first.output,
      });
      // The pause is persisted and the run is waiting: the kill lands in the pause.
      await waitFor('the run to wait', async () => (await theRun(ctx.dir))?.run.status === 'waiting', { context: first.output });
      await first.kill();
      // The report is written as records finish, in record order: the killed run's holds what it finished
      // before the first record the pause holds (with records in flight, any of the ones after the first).
      const killedAt = lineCount(path.join(ctx.dir, 'reports/check.csv'));
      expect(killedAt).toBeGreaterThanOrEqual(1 + 1);
      expect(killedAt).toBeLessThan(1 + 8);

      await resumeWithStart(ctx);
      // one row per input row, the duplicate's included, each once across the kill
      expect(lineCount(path.join(ctx.dir, 'reports/check.csv'))).toBe(1 + 8);
      const ok = ctx.proxy.calls.filter((c) => c.method === 'checkAccount' && !c.answer.includes('rate_limit_exceeded'));
      const perNumber = new Map<number, number>();
      for (const c of ok)
        perNumber.set(
          (c.body as { phoneNumber: number }).phoneNumber,
          (perNumber.get((c.body as { phoneNumber: number }).phoneNumber) ?? 0) + 1,
        );
      expect([...perNumber.keys()].sort()).toEqual([79001112233, 79002223344, 79003334455, 79005550000, 79009990001, 79009990002]);
      expect([...perNumber.values()]).toEqual([1, 1, 1, 1, 1, 1]);
      const csv = await readFile(path.join(ctx.dir, 'reports/check.csv'), 'utf8');
      expect(csv.match(/,exists,/g)).toHaveLength(3);
      expect(csv.match(/,none,/g)).toHaveLength(3);
      expect(csv.match(/,invalid,/g)).toHaveLength(1);
    },
  );

  it.concurrent('files.broadcast: killed with kill -9 mid-way, resumed, every recipient sent exactly once', async (t) => {
    // Quick statuses (delivered 50 ms, read 100 ms after sending) and a 5 ms poll of the proxy's record for the
    // kill; the send queue's 500 ms interval (the least the service allows) paces the run, not the 300 ms pace.
    const ctx = await project(t, { sendIntervalMs: 500 }, { deliveredAfterMs: 50, readAfterMs: 100 });
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
      urlFile: ${files.url('/brochure.pdf')}
      fileName: brochure.pdf
      caption: "Hello \${{ item.firstName }}"
      pace: { delay: 300ms }
      reconcile: { sendInterval: 500ms, grace: 2s, clockSkew: 2s }
      follow: { deadline: 3s, poll: 50ms, until: read }
      report: reports/broadcast.csv
`,
    );
    const first = ctx.spawn('run', 'broadcast');
    await waitFor('three sends', () => ctx.proxy.calls.filter((c) => c.method === 'sendFileByUrl').length >= 3, {
      context: first.output,
      intervalMs: 5,
    });
    await first.kill();
    await resumeWithStart(ctx);

    await waitFor('the send queue to drain', async () => (await ctx.admin('queue')).pending.length === 0);
    for (const [i, phone] of phones.entries()) {
      const history = (await ctx.api('getChatHistory', { chatId: `${phone}@c.us` })) as any[];
      const files = history.filter((m) => m.type === 'outgoing' && m.typeMessage === 'documentMessage');
      expect(
        files.map((m) => m.caption),
        `${phone}`,
      ).toEqual([`Hello Friend${i}`]);
    }
    const csv = await readFile(path.join(ctx.dir, 'reports/broadcast.csv'), 'utf8');
    expect(csv.match(/,sent,/g)).toHaveLength(6);
  });

  it.concurrent(
    `files.broadcast: a send caught in flight by kill -9 is found at the service, or sent again once the journal lag passed with it in neither the send queue nor the history; every recipient once (${TRIALS} trial(s))`,
    async (t) => {
      const outcomes: string[] = [];
      // Even trials: the held send goes on to the service after the kill; odd ones: it never arrives.
      for (let i = 0; i < TRIALS; i++) outcomes.push(await inFlightTrial(t, i % 2 === 0));
      if (process.env.MSGFLOW_TRIALS) console.info(`in-flight send trials: ${TRIALS}, ${outcomes.join(' | ')}`);
      expect(outcomes.filter((o) => !o.startsWith('ok'))).toEqual([]);
    },
    60_000 * TRIALS,
  );

  it.concurrent(
    `messages.broadcast (text and poll variants): a send caught in flight by kill -9 is found at the service by its content, or sent again once; every recipient once (${TRIALS} trial(s))`,
    async (t) => {
      const outcomes: string[] = [];
      for (let i = 0; i < TRIALS; i++) outcomes.push(await inFlightTrial(t, i % 2 === 0, 'messages'));
      if (process.env.MSGFLOW_TRIALS) console.info(`messages.broadcast in-flight send trials: ${TRIALS}, ${outcomes.join(' | ')}`);
      expect(outcomes.filter((o) => !o.startsWith('ok'))).toEqual([]);
    },
    60_000 * TRIALS,
  );

  it('contacts.import: upsert twice gives the same state', async (t) => {
    const ctx = await project(t);
    await writeData(
      ctx.dir,
      'data/contacts.csv',
      'phone,firstName,lastName\n79001112233,Alice,A\n79002223344,Bob,B\n79009990001,Nobody,N\nxx,Bad,Row\n',
    );
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
    await ctx.run('run', 'import');
    const strip = (s: any) => JSON.stringify(s, (k, v) => (k === 'updatedAt' || k === 'createdAt' ? undefined : v));
    const state1 = strip(await ctx.admin('contacts'));
    const r1 = JSON.parse(await readFile(path.join(ctx.dir, 'reports/import.json'), 'utf8'));
    expect(r1.summary).toMatchObject({ added: 2, notOnMessenger: 1, invalid: 1 });
    await ctx.run('run', 'import');
    expect(strip(await ctx.admin('contacts'))).toBe(state1);
    const r2 = JSON.parse(await readFile(path.join(ctx.dir, 'reports/import.json'), 'utf8'));
    expect(r2.summary).toMatchObject({ added: 0, updated: 2, notOnMessenger: 1, invalid: 1 });
  });

  it('outgoing.audit: the second audit shows the trend against the first', async (t) => {
    const ctx = await project(t);
    const now = Math.floor(Date.now() / 1000);
    const out = (chatId: string, ago: number, statusMessage: string) =>
      ctx.admin('incoming', {
        type: 'outgoing',
        chatId,
        typeMessage: 'documentMessage',
        fileName: 'a.pdf',
        timestamp: now - ago,
        sendByApi: true,
        statusMessage,
      });
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
    await ctx.run('run', 'audit');
    const a1 = JSON.parse(await readFile(path.join(ctx.dir, 'reports/audit.json'), 'utf8'));
    expect(a1.summary).toMatchObject({ total: 2, notDelivered: 1, trend: null });
    await out('79003334455@c.us', 900, 'sent');
    await out('79004445566@c.us', 30, 'delivered');
    await ctx.run('run', 'audit');
    const a2 = JSON.parse(await readFile(path.join(ctx.dir, 'reports/audit.json'), 'utf8'));
    expect(a2.summary).toMatchObject({ total: 4, notDelivered: 2, trend: { total: 2, notDelivered: 1 } });
    expect(a2.summary.thresholdsCrossed).toEqual([{ metric: 'notDelivered', value: 2, threshold: 2, direction: 'above' }]);
  });
});
