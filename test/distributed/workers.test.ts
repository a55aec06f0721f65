/**
 * The BullMQ executor across processes: `msgflow worker`s and `msgflow run`
 * as child processes against `msgflow serve`, on a fresh Redis prefix each.
 * The tests run at once: each waits mostly on its processes and on time
 * (schedule slots, a pause that must hold), which the others fill.
 */
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { writeData } from '../support/project.js';
import { cli } from '../support/cli.js';
import { distributedProject, exitOf, kill, redisOrSkip, sharedServe, until, type Proc, type Project, type SharedServe } from './helpers.js';

/**
 * Items of the three-worker kill test: 1,000 in `npm test` (the kill still lands with a fifth of them at
 * the service and the rest queued, and at most 96 in flight); `npm run trials` runs it with 5,000.
 */
const ITEMS = Number(process.env.MSGFLOW_TEST_ITEMS ?? 300);
let redis = false;
let serve: SharedServe | undefined;
beforeAll(async () => {
  redis = await redisOrSkip();
  // One service process for the file, an instance per test.
  if (redis)
    serve = await sharedServe({
      // One release an hour: every call stays in the service's send queue, where it is counted.
      bulk: { sendIntervalMs: 3_600_000 },
      // The service answers rate_limit_exceeded after 30 distinct numbers, for an hour.
      check: { checkAccountLimit: { numbers: 30, windowMinutes: 10, retryAfterSeconds: 3600 } },
      tick: {},
      // One release an hour as well: the kill trials count what reached it.
      limited: { sendIntervalMs: 3_600_000 },
      campaign: { sendIntervalMs: 3_600_000 },
    });
});
afterAll(() => serve?.close());

/** A project on the file's service, closed when its test ends (the tests run at once: each closes only its own). */
async function project(
  t: TestContext,
  instance: string,
  o: { proxy?: boolean; clientLimits?: string; executor?: string } = {},
): Promise<Project> {
  const p = await distributedProject({ ...o, shared: { serve: serve!, instance } });
  t.onTestFinished(() => p.close());
  return p;
}

/**
 * A worker (or a replica) loads the whole runtime and BullMQ: 5-20 s alone on the shared 2-core machine
 * at a load of 20-30, over 30 s when this file starts ten of them at once.
 */
const STARTUP_MS = 90_000;
const ready = (w: Proc) => until('worker ready', () => w.output().includes('worker ready'), STARTUP_MS, w);

/** Every entry of the service's send queue (pending and failed): what reached the service. */
async function sent(ctx: Project): Promise<Map<string, number>> {
  const q = (await ctx.admin('queue')) as { pending: { chatId: string }[]; failed: { chatId: string }[] };
  const per = new Map<string, number>();
  for (const e of [...q.pending, ...q.failed]) per.set(e.chatId, (per.get(e.chatId) ?? 0) + 1);
  return per;
}

describe.concurrent('BullMQ executor: msgflow worker processes', () => {
  it(`three workers, one killed with kill -9 mid-run: each of ${ITEMS} items is recorded once and sent at most once`, async (t) => {
    if (!redis) return t.skip();
    const ctx = await project(t, 'bulk', { executor: '  journalLagMs: 2000' });
    const chats = Array.from({ length: ITEMS }, (_, i) => `7910${String(i).padStart(7, '0')}@c.us`);
    await writeData(ctx.dir, 'data/chats.csv', `chat\n${chats.join('\n')}\n`);
    await writeData(
      ctx.dir,
      'flows/bulk.yaml',
      `name: bulk
instance: default
inputs:
  chats: { file: data/chats.csv, maxRows: 100000 }
steps:
  - id: send
    uses: sendFileByUrl
    forEach: \${{ inputs.chats }}
    with:
      chatId: \${{ item.chat }}
      urlFile: http://127.0.0.1:9/brochure.pdf
      fileName: brochure.pdf
`,
    );
    const workers = [
      ctx.spawn('worker', '--concurrency', '32'),
      ctx.spawn('worker', '--concurrency', '32'),
      ctx.spawn('worker', '--concurrency', '32'),
    ];
    // The run reads its rows and queues them while the workers start; the kill waits until all three work.
    const run = ctx.spawn('run', 'bulk', '--json', '--log-level', 'error');
    await Promise.all(workers.map(ready));
    await until('a fifth of the items at the service', async () => (await sent(ctx)).size >= ITEMS / 5, 180_000, run);
    await kill(workers[0]);
    const code = await exitOf(run, 300_000);
    const out = run.output();
    const record = JSON.parse(out.slice(out.indexOf('{'))) as {
      run: { itemsDone: number; itemsFailed: number };
      steps: { failed: number; done: number }[];
    };
    // Every item counted once: done + failed is the number of items.
    expect(record.run.itemsDone + record.run.itemsFailed).toBe(ITEMS);
    const per = await sent(ctx);
    // At most once at the service, whatever the kill interrupted.
    expect([...per.values()].filter((n) => n > 1)).toEqual([]);
    // Only the calls the killed worker had in flight may be unknown (recorded failed, never made again): at most its concurrency (32).
    // On failure, the workers' warnings (lock renewals, takeovers, unknown outcomes) say why.
    expect(record.run.itemsFailed, workers.map((w) => w.output()).join('\n---\n')).toBeLessThanOrEqual(32);
    expect(per.size).toBeGreaterThanOrEqual(ITEMS - record.run.itemsFailed);
    expect(code).toBe(record.run.itemsFailed === 0 ? 0 : 1);
  }, 540_000);
});

/** Kill trials run by the test below: `npm run trials` runs 20 (MSGFLOW_TRIALS) for the figures of docs/distributed.md. */
const TRIALS = Number(process.env.MSGFLOW_TRIALS ?? 1);
const KILL_ITEMS = 40;

interface KillTrial {
  lost: string[];
  doubled: string[];
  /** Items recorded ITEM_OUTCOME_UNKNOWN (their call had left when the worker died). */
  unknown: number;
}

/**
 * Two workers of concurrency 8 whose client sends 5 sendFileByUrl a second:
 * most items a worker holds wait on its rate limiter. One is killed with
 * kill -9 once a few messages reached the service.
 */
async function workerKillTrial(t: TestContext, trial: number): Promise<KillTrial> {
  // A journal lag of 2 s: how long a send whose worker died once it had left is looked for before it is made again.
  const ctx = await project(t, 'limited', { clientLimits: 'rateLimits: { sendFileByUrl: 5 }', executor: '  journalLagMs: 2000' });
  try {
    const chats = Array.from({ length: KILL_ITEMS }, (_, i) => `7931${String(trial).padStart(3, '0')}${String(i).padStart(4, '0')}@c.us`);
    await writeData(ctx.dir, 'data/chats.csv', `chat\n${chats.join('\n')}\n`);
    await writeData(
      ctx.dir,
      'flows/limited.yaml',
      `name: limited
instance: default
inputs:
  chats: { file: data/chats.csv }
steps:
  - id: send
    uses: sendFileByUrl
    forEach: \${{ inputs.chats }}
    with:
      chatId: \${{ item.chat }}
      urlFile: http://127.0.0.1:9/brochure.pdf
      fileName: brochure.pdf
`,
    );
    const workers = [ctx.spawn('worker', '--concurrency', '8'), ctx.spawn('worker', '--concurrency', '8')];
    await Promise.all(workers.map(ready));
    const run = ctx.spawn('run', 'limited', '--json', '--log-level', 'error');
    const reached = async () => [...(await ctx.outgoing()).keys()].filter((c) => chats.includes(c)).length;
    await until('a few messages at the service', async () => (await reached()) >= 4, 60_000, run);
    await kill(workers[0]);
    await exitOf(run, 120_000);
    const out = run.output();
    const record = JSON.parse(out.slice(out.indexOf('{'))) as { run: { itemsDone: number; itemsFailed: number } };
    const per = await ctx.outgoing();
    expect(record.run.itemsDone + record.run.itemsFailed).toBe(KILL_ITEMS);
    return {
      lost: chats.filter((c) => !per.has(c)),
      doubled: chats.filter((c) => (per.get(c) ?? 0) > 1),
      unknown: record.run.itemsFailed,
    };
  } finally {
    await ctx.close();
  }
}

describe.concurrent('BullMQ executor: a killed worker loses nothing it had not sent', () => {
  it(
    `a worker killed with kill -9 while its items wait on the client's rate limiter: every item reaches the service exactly once (${TRIALS} trial(s))`,
    async (t) => {
      if (!redis) return t.skip();
      const trials: KillTrial[] = [];
      for (let i = 0; i < TRIALS; i++) trials.push(await workerKillTrial(t, i));
      if (TRIALS > 1) {
        const unknown = trials.map((x) => x.unknown);
        console.info(
          `worker kill trials: ${TRIALS}, lost ${trials.flatMap((x) => x.lost).length}, doubled ${trials.flatMap((x) => x.doubled).length}, ` +
            `items recorded ITEM_OUTCOME_UNKNOWN per trial ${unknown.join(' ')} (max ${Math.max(...unknown)})`,
        );
      }
      // Items the killed worker held but had not sent are worked again elsewhere; none is sent twice.
      expect(trials.flatMap((x) => x.lost)).toEqual([]);
      expect(trials.flatMap((x) => x.doubled)).toEqual([]);
    },
    (90_000 + STARTUP_MS) * TRIALS,
  );
});

const CAMPAIGN_RECIPIENTS = 30;

/** A project's recipients (`phone,firstName`) and a flow `name` sending them one text each; the recipients' chat ids. */
async function writeCampaign(ctx: Project, name: string, phones: string[], extra: string): Promise<string[]> {
  await writeData(ctx.dir, 'data/recipients.csv', `phone,firstName\n${phones.map((p, i) => `${p},Friend${i}`).join('\n')}\n`);
  await writeData(
    ctx.dir,
    `flows/${name}.yaml`,
    `name: ${name}
instance: default
inputs:
  recipients: { file: data/recipients.csv }
steps:
  - id: send
    uses: messages.broadcast
    with:
      recipients: \${{ inputs.recipients }}
      message: { text: "Spring prices, \${{ row.firstName }}" }
      ${extra}
      follow: { deadline: 0 }
      report: reports/${name}.csv
`,
  );
  return phones.map((p) => `${p}@c.us`);
}

/**
 * A messages.broadcast campaign on the workers (a job: one step, one job):
 * two workers, the client sending 5 sendMessage a second, and the worker that
 * runs the campaign killed with kill -9 once a few messages reached the
 * service; the other takes the step over once its lock lapsed and finishes
 * it from the campaign's records. Counted per recipient at the service.
 */
async function campaignKillTrial(t: TestContext, trial: number): Promise<KillTrial & { outcome: string }> {
  const ctx = await project(t, 'campaign', { clientLimits: 'rateLimits: { sendMessage: 5 }' });
  try {
    const phones = Array.from(
      { length: CAMPAIGN_RECIPIENTS },
      (_, i) => `7932${String(trial).padStart(3, '0')}${String(i).padStart(4, '0')}`,
    );
    const chats = await writeCampaign(
      ctx,
      'campaign',
      phones,
      'reconcile: { sendInterval: 500ms, grace: 1s, clockSkew: 2s, journalLag: 2s }',
    );
    // At info level a worker says when it takes the campaign's step.
    const workers = [0, 1].map(() => ctx.spawn('worker', '--concurrency', '4', '--log-level', 'info'));
    await Promise.all(workers.map(ready));
    const run = ctx.spawn('run', 'campaign', '--json', '--log-level', 'error');
    const reached = async () => [...(await ctx.outgoing()).keys()].filter((c) => chats.includes(c)).length;
    await until('a few messages at the service', async () => (await reached()) >= 4, 60_000, run);
    const holder = workers.find((w) => w.output().includes("step 'send' worked by a worker"));
    expect(holder, workers.map((w) => w.output()).join('\n---\n')).toBeDefined();
    await kill(holder);
    await exitOf(run, 120_000);
    const out = run.output();
    const record = JSON.parse(out.slice(out.indexOf('{'))) as {
      run: { status: string };
      steps: { output?: { sent: number; unknown: number } }[];
    };
    const per = await ctx.outgoing();
    const other = workers.find((w) => w !== holder)!;
    return {
      lost: chats.filter((c) => !per.has(c)),
      doubled: chats.filter((c) => (per.get(c) ?? 0) > 1),
      unknown: record.steps[0]?.output?.unknown ?? -1,
      // The run succeeded, every recipient sent, and the step was taken over by the other worker.
      outcome: JSON.stringify({
        status: record.run.status,
        sent: record.steps[0]?.output?.sent,
        takenOver: other.output().includes("step 'send' worked by a worker"),
      }),
    };
  } finally {
    await ctx.close();
  }
}

describe.concurrent('BullMQ executor: a campaign on the workers', () => {
  it(
    `messages.broadcast on the workers, the worker running it killed with kill -9 mid-campaign: the other finishes it, each recipient gets exactly one message (${TRIALS} trial(s))`,
    async (t) => {
      if (!redis) return t.skip();
      const trials: (KillTrial & { outcome: string })[] = [];
      for (let i = 0; i < TRIALS; i++) trials.push(await campaignKillTrial(t, i));
      if (TRIALS > 1) {
        console.info(
          `campaign worker kill trials: ${TRIALS}, recipients ${TRIALS * CAMPAIGN_RECIPIENTS}, lost ${trials.flatMap((x) => x.lost).length}, ` +
            `doubled ${trials.flatMap((x) => x.doubled).length}, unknown ${trials.reduce((n, x) => n + x.unknown, 0)}`,
        );
      }
      expect(trials.flatMap((x) => x.lost)).toEqual([]);
      expect(trials.flatMap((x) => x.doubled)).toEqual([]);
      expect(trials.map((x) => x.unknown)).toEqual(Array(TRIALS).fill(0));
      expect(trials.map((x) => x.outcome)).toEqual(
        Array(TRIALS).fill(JSON.stringify({ status: 'succeeded', sent: CAMPAIGN_RECIPIENTS, takenOver: true })),
      );
    },
    (120_000 + STARTUP_MS) * TRIALS,
  );
});

describe.concurrent('BullMQ executor: a campaign plan applied on the workers', () => {
  it(
    'msgflow apply sends the plan from a worker: each planned recipient once, from its planned instance, and the diff against the plan is empty',
    async (t) => {
      if (!redis) return t.skip();
      const ctx = await project(t, 'campaign');
      const phones = Array.from({ length: 12 }, (_, i) => `79330000${String(i).padStart(3, '0')}`);
      const chats = await writeCampaign(ctx, 'planned', phones, 'campaign: planned');
      const worker = ctx.spawn('worker', '--concurrency', '4', '--log-level', 'info');
      await ready(worker);
      const plan = await cli(['run', 'planned', '--plan', 'plan.json', '--no-daemon'], ctx.dir);
      expect(plan.code, plan.stdout + plan.stderr).toBe(0);
      expect((await ctx.outgoing()).size).toBe(0); // planning sends nothing
      const apply = ctx.spawn('apply', 'plan.json', '--json', '--log-level', 'error');
      expect(await exitOf(apply, 120_000), apply.output()).toBe(0);
      expect(worker.output()).toContain("step 'send' worked by a worker");
      const per = await ctx.outgoing();
      expect(chats.filter((c) => per.get(c) !== 1)).toEqual([]);
      const out = apply.output();
      const record = JSON.parse(out.slice(out.indexOf('{'))) as {
        run: { status: string };
        steps: { output?: { sent: number; planDiff?: unknown } }[];
      };
      expect(record.run.status).toBe('succeeded');
      expect(record.steps[0]?.output).toMatchObject({
        sent: chats.length,
        planDiff: { planned: chats.length, asPlanned: chats.length, notSent: 0, otherInstance: 0, unplanned: 0 },
      });
    },
    120_000 + STARTUP_MS,
  );
});

describe.concurrent('BullMQ executor: checkAccount pauses', () => {
  it(
    'a checkAccount pause raised on one worker stops the checks of all workers',
    async (t) => {
      if (!redis) return t.skip();
      const ctx = await project(t, 'check', { proxy: true });
      const numbers = Array.from({ length: 200 }, (_, i) => `7920${String(i).padStart(7, '0')}`);
      await writeData(ctx.dir, 'data/numbers.csv', `phone\n${numbers.join('\n')}\n`);
      await writeData(
        ctx.dir,
        'flows/check.yaml',
        `name: check
instance: default
inputs:
  numbers: { file: data/numbers.csv }
steps:
  - id: check
    uses: checkAccount
    forEach: \${{ inputs.numbers }}
    with:
      phoneNumber: \${{ number(item.phone) }}
`,
      );
      const workers = [ctx.spawn('worker', '--concurrency', '4'), ctx.spawn('worker', '--concurrency', '4')];
      await Promise.all(workers.map(ready));
      const run = ctx.spawn('run', 'check', '--log-level', 'error');
      const checks = () => ctx.calls.filter((c) => c.method === 'checkAccount');
      const limited = () => checks().findIndex((c) => c.answer.includes('rate_limit_exceeded'));
      await until('rate_limit_exceeded at the service', () => limited() >= 0, 60_000, run);
      const paused = await until(
        'the pause in msgflow pauses',
        async () => {
          const r = await cli(['pauses', '--json'], ctx.dir);
          return r.code === 0 && r.stdout.includes('checkAccount') ? r.stdout : undefined;
        },
        10_000,
        workers[0],
      );
      expect(paused).toContain('rate_limit_exceeded');
      // Give both workers time to take more items: none of them may call checkAccount again.
      await new Promise((r) => setTimeout(r, 1500));
      const after = checks().length - limited() - 1;
      // Only calls already in flight when the first answer came (2 workers x 4 at once) may follow it.
      expect(after).toBeLessThanOrEqual(8);
      const settled = checks().length;
      await new Promise((r) => setTimeout(r, 1000));
      expect(checks().length).toBe(settled);
      expect(run.child.exitCode).toBeNull(); // the run waits for the pause; it does not fail its items
    },
    90_000 + STARTUP_MS,
  );
});

describe.concurrent('BullMQ executor: msgflow start replicas', () => {
  it(
    'two msgflow start replicas fire each slot of a schedule once',
    async (t) => {
      if (!redis) return t.skip();
      const ctx = await project(t, 'tick');
      await writeData(
        ctx.dir,
        'flows/tick.yaml',
        `name: tick
instance: default
on:
  schedule: { cron: "* * * * * *" }
  overlap: allow
steps:
  - id: hello
    uses: log
    with: { message: tick }
`,
      );
      // At info level each replica logs the slots it fires ("schedule: tick fired for <slot>").
      const replicas = [0, 1].map(() => ctx.spawn('start', '--no-listen', '--no-ui', '--log-level', 'info'));
      await Promise.all(replicas.map((r) => until('replica started', () => r.output().includes('msgflow: started'), STARTUP_MS, r)));
      // Both replicas up: from here on, every second is one slot.
      const fired = () => replicas.flatMap((r) => [...r.output().matchAll(/schedule: tick fired for (\S+)/g)].map((m) => m[1]));
      // The runs are read (each read a store in this process) once five slots have fired, not ten times a second before.
      await until('5 slots fired', () => fired().length >= 5, 30_000, replicas[0]);
      await until('5 runs', async () => (await runsOf(ctx.dir, 'tick')).length >= 5, 30_000, replicas[0]);
      for (const r of replicas) r.child.kill('SIGTERM');
      await Promise.all(replicas.map((r) => exitOf(r, 30_000)));
      const runs = await runsOf(ctx.dir, 'tick');
      // Each slot fired by one replica only, and one run per fired slot. (The slots, not the runs' start
      // seconds: on a loaded machine a slot's run may start in the next slot's second.)
      const slots = fired();
      expect(slots.filter((s, i) => slots.indexOf(s) !== i)).toEqual([]);
      // Each fired slot is the cron's second itself, and no slot is taken for missed while both run.
      expect(slots.filter((s) => !s.endsWith('.000Z'))).toEqual([]);
      expect(replicas.flatMap((r) => r.output().match(/.*missed its run.*/g) ?? [])).toEqual([]);
      expect(runs.map((r) => r.trigger).filter((tr) => tr !== 'schedule')).toEqual([]);
      expect(runs.length).toBeLessThanOrEqual(slots.length);
      expect(
        replicas.every((r) => !/error/i.test(r.output())),
        replicas.map((r) => r.output()).join('\n---\n'),
      ).toBe(true);
    },
    90_000 + STARTUP_MS,
  );
});

async function runsOf(dir: string, flow: string): Promise<{ startedAt: number; trigger: string }[]> {
  const r = await cli(['runs', '--flow', flow, '--limit', '1000', '--json'], dir);
  return JSON.parse(r.stdout) as { startedAt: number; trigger: string }[];
}
