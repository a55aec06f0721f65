/**
 * The BullMQ executor across processes: `msgflow worker`s and `msgflow run`
 * as child processes against `msgflow serve`, on a fresh Redis prefix each.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeData } from '../support/project.js';
import { cli } from '../support/cli.js';
import { distributedProject, exitOf, kill, redisOrSkip, until, type Proc, type Project } from './helpers.js';

const ITEMS = Number(process.env.MSGFLOW_TEST_ITEMS ?? 5000);
let redis = false;
let projects: Project[] = [];
beforeAll(async () => void (redis = await redisOrSkip()));
afterEach(async () => {
  await Promise.all(projects.map((p) => p.close()));
  projects = [];
});

async function project(o: Parameters<typeof distributedProject>[0] = {}): Promise<Project> {
  const p = await distributedProject(o);
  projects.push(p);
  return p;
}

const ready = (w: Proc) => until('worker ready', () => w.output().includes('worker ready'), 30_000, w);

/** Every entry of the service's send queue (pending and failed): what reached the service. */
async function sent(ctx: Project): Promise<Map<string, number>> {
  const q = (await ctx.admin('queue')) as { pending: { chatId: string }[]; failed: { chatId: string }[] };
  const per = new Map<string, number>();
  for (const e of [...q.pending, ...q.failed]) per.set(e.chatId, (per.get(e.chatId) ?? 0) + 1);
  return per;
}

describe('BullMQ executor: msgflow worker processes', () => {
  it(`three workers, one killed with kill -9 mid-run: each of ${ITEMS} items is recorded once and sent at most once`, async (t) => {
    if (!redis) return t.skip();
    // One release an hour: every call stays in the service's send queue, where it is counted.
    const ctx = await project({ instance: { sendIntervalMs: 3_600_000 } });
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
    await Promise.all(workers.map(ready));
    const run = ctx.spawn('run', 'bulk', '--json', '--log-level', 'error');
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
    expect(record.run.itemsFailed).toBeLessThanOrEqual(32);
    expect(per.size).toBeGreaterThanOrEqual(ITEMS - record.run.itemsFailed);
    expect(code).toBe(record.run.itemsFailed === 0 ? 0 : 1);
  }, 540_000);
});

describe('BullMQ executor: checkAccount pauses', () => {
  it('a checkAccount pause raised on one worker stops the checks of all workers', async (t) => {
    if (!redis) return t.skip();
    // The service answers rate_limit_exceeded after 30 distinct numbers, for an hour.
    const ctx = await project({
      proxy: true,
      instance: { checkAccountLimit: { numbers: 30, windowMinutes: 10, retryAfterSeconds: 3600 } },
    });
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
  }, 90_000);
});

describe('BullMQ executor: msgflow start replicas', () => {
  it('two msgflow start replicas fire each slot of a schedule once', async (t) => {
    if (!redis) return t.skip();
    const ctx = await project();
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
    const replicas = [ctx.spawn('start', '--no-listen', '--no-ui'), ctx.spawn('start', '--no-listen', '--no-ui')];
    await Promise.all(replicas.map((r) => until('replica started', () => r.output().includes('msgflow: started'), 30_000, r)));
    // Both replicas up: from here on, every second is one slot.
    await until('5 runs', async () => (await runsOf(ctx.dir, 'tick')).length >= 5, 30_000, replicas[0]);
    for (const r of replicas) r.child.kill('SIGTERM');
    await Promise.all(replicas.map((r) => exitOf(r, 30_000)));
    const runs = await runsOf(ctx.dir, 'tick');
    // One run per second-slot: a slot fired by both replicas would show two runs started within the same second.
    const perSecond = new Map<number, number>();
    for (const r of runs) perSecond.set(Math.floor(r.startedAt / 1000), (perSecond.get(Math.floor(r.startedAt / 1000)) ?? 0) + 1);
    expect([...perSecond.entries()].filter(([, n]) => n > 1)).toEqual([]);
    expect(
      replicas.every((r) => !/error/i.test(r.output())),
      replicas.map((r) => r.output()).join('\n---\n'),
    ).toBe(true);
  }, 90_000);
});

async function runsOf(dir: string, flow: string): Promise<{ startedAt: number; trigger: string }[]> {
  const r = await cli(['runs', '--flow', flow, '--limit', '1000', '--json'], dir);
  return JSON.parse(r.stdout) as { startedAt: number; trigger: string }[];
}
