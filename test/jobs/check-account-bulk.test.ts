import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkAccountBulk, CheckAccountBulkInput } from '../../src/actions/index.js';
import { ManualClock } from '../../src/util/clock.js';
import { Durables, makeContext } from './helpers/context.js';
import { localConfig, startLocal, tempDir, writeData, type LocalUnderTest } from './helpers/local.js';

const T0 = Date.parse('2026-01-05T09:00:00Z');
const HOUR = 3_600_000;

const LEADS = `phone,name
+7 (900) 111-22-33,Alice
79002223344,Bob
8-800-bad,Broken
7900 555 0000,Hidden
79009990001,Nobody
+7 900 111 22 33,Alice again
79003334455,Carol
79009990002,Nobody2
`;

let open: LocalUnderTest[] = [];
afterEach(async () => {
  await Promise.all(open.map((l) => l.close()));
  open = [];
});

async function start(dir: string, clock: ManualClock, instance: Record<string, unknown> = {}) {
  const l = await startLocal({
    dir,
    clock,
    config: localConfig({}, { checkAccountLimit: { numbers: 4, windowMinutes: 10, retryAfterSeconds: 60 }, ...instance }),
  });
  open.push(l);
  return l;
}

const input = (over: Record<string, unknown> = {}) =>
  CheckAccountBulkInput.parse({ file: 'data/leads.csv', pace: { delay: 0, jitter: 0 }, report: 'reports/leads.csv', ...over });

/** Successful (not rate-limited) checks per phone number that reached the service. */
function checksPerNumber(l: LocalUnderTest): Map<number, number> {
  const out = new Map<number, number>();
  for (const r of l.requests) {
    if (r.method !== 'checkAccount') continue;
    const a = r.answer as { status?: boolean };
    if (a && a.status === false) continue;
    const phone = Number((r.body as { phoneNumber: number }).phoneNumber);
    out.set(phone, (out.get(phone) ?? 0) + 1);
  }
  return out;
}

describe('checkAccount.bulk', () => {
  it('pauses the instance on rate_limit_exceeded, survives a restart during the pause, and never re-checks a number', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', LEADS);
    const clock = new ManualClock(T0);
    const durables = new Durables();

    // ---- first process: 4 distinct checks, the 5th hits the service's limit
    const l1 = await start(dir, clock);
    const ctx1 = makeContext({ client: l1.client, clock, durables, baseDir: dir });
    const run1 = checkAccountBulk.run(ctx1, input());
    run1.catch(() => undefined);
    await ctx1.waiting;
    const pause = await durables.shared('checkAccount:default').get<{ until: number; retryAfterMs: number }>('pause');
    expect(pause?.until).toBe(T0 + 2 * HOUR); // max(2h default, 60 s retryAfter)
    expect(pause?.retryAfterMs).toBe(60_000);
    expect(ctx1.waits[0]!.reason).toMatch(/rate_limit_exceeded/);
    expect(ctx1.events.map((e) => e.name)).toContain('checkAccount.paused');
    // kill the "process" in the middle of the pause
    ctx1.abort.abort(new Error('killed'));
    await expect(run1).rejects.toThrow();
    await l1.close();
    open = open.filter((x) => x !== l1);

    // ---- restart: same durable state, a new service process on the same data
    await clock.advance(HOUR); // one hour of the pause passes while down
    const l2 = await start(dir, clock);
    const ctx2 = makeContext({ client: l2.client, clock, durables, baseDir: dir });
    const run2 = checkAccountBulk.run(ctx2, input());
    await ctx2.waiting;
    expect(ctx2.waits[0]!.until).toBe(T0 + 2 * HOUR); // same wake time, only the rest is slept
    expect(l2.requests.filter((r) => r.method === 'checkAccount')).toHaveLength(0);
    await clock.advance(HOUR);
    const summary = await run2;

    expect(summary).toMatchObject({ total: 8, unique: 6, duplicates: 1, invalid: 1, exists: 3, none: 3, failed: 0, pauses: 1 });
    // every valid number reached the service exactly once across both processes
    const counts = new Map([...checksPerNumber(l1)].map(([k, v]) => [k, v + (checksPerNumber(l2).get(k) ?? 0)]));
    for (const [k, v] of checksPerNumber(l2)) if (!counts.has(k)) counts.set(k, v);
    expect([...counts.keys()].sort()).toEqual([79001112233, 79002223344, 79003334455, 79005550000, 79009990001, 79009990002]);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);

    const csv = await readFile(path.join(dir, 'reports/leads.csv'), 'utf8');
    expect(csv.split('\r\n')[0]).toContain('status');
    expect(csv).toMatch(/79001112233.*exists.*79001112233@c\.us/);
    expect(csv).toMatch(/8-800-bad.*invalid/);
    expect(ctx2.progressLog.at(-1)).toEqual({ done: 6, total: 7, failed: 1 });
  });

  it('reuses results within the TTL, never re-checks a nonexistent number even with force, and re-checks after the TTL', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', 'phone\n79001112233\n79009990001\n');
    const clock = new ManualClock(T0);
    const durables = new Durables();
    const l = await start(dir, clock, { checkAccountLimit: { numbers: 100, windowMinutes: 10, retryAfterSeconds: 60 } });
    const run = (id: string, over: Record<string, unknown> = {}) =>
      checkAccountBulk.run(makeContext({ client: l.client, clock, durables: Object.assign(new Durables(), { sharedSpaces: durables.sharedSpaces }), baseDir: dir, runId: id }), input({ ...over, report: `reports/${id}.json` }));

    expect(await run('a')).toMatchObject({ exists: 1, none: 1, checked: 2, fromCache: 0 });
    expect(await run('b')).toMatchObject({ exists: 1, none: 1, checked: 0, fromCache: 2 });
    const forced = await run('c', { force: true });
    expect(forced).toMatchObject({ exists: 1, none: 1, checked: 1, fromCache: 1 });
    const last = l.requests.filter((r) => r.method === 'checkAccount').at(-1)!;
    expect(last.body).toEqual({ phoneNumber: 79001112233, force: true });
    const json = JSON.parse(await readFile(path.join(dir, 'reports/c.json'), 'utf8'));
    expect(json.rows.find((r: { phone: number }) => r.phone === 79009990001)).toMatchObject({ status: 'none', source: 'cache' });

    await clock.advance(24 * HOUR + 1);
    expect(await run('d')).toMatchObject({ checked: 2, fromCache: 0 });
    expect(l.requests.filter((r) => r.method === 'checkAccount')).toHaveLength(5);
  });

  it('stops with a clear reason when the instance is not authorized', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', 'phone\n79001112233\n');
    const clock = new ManualClock(T0);
    const l = await start(dir, clock, { state: 'notAuthorized' });
    const ctx = makeContext({ client: l.client, clock, durables: new Durables(), baseDir: dir });
    const err = await checkAccountBulk.run(ctx, input()).catch((e) => e);
    expect(err.code).toBe('JOB_STOPPED');
    expect(err.message).toMatch(/instance 'default' cannot check accounts: .*notAuthorized/);
  });

  it('checks usernames, and a dry run sends nothing', async () => {
    const dir = await tempDir();
    const clock = new ManualClock(T0);
    const l = await start(dir, clock);
    const durables = new Durables();
    const dry = makeContext({ client: l.client, clock, durables, baseDir: dir, dryRun: true });
    const s1 = await checkAccountBulk.run(dry, input({ file: undefined, usernames: ['@alice', 'bob', '@nobody_here'], numbers: ['bad'] }));
    expect(s1).toMatchObject({ unique: 3, invalid: 1, wouldCheck: 3, checked: 0 });
    expect(l.requests).toHaveLength(0);
    const ctx = makeContext({ client: l.client, clock, durables: new Durables(), baseDir: dir });
    const s2 = await checkAccountBulk.run(ctx, input({ file: undefined, usernames: ['@alice', 'bob', '@nobody_here', '@ALICE'] }));
    expect(s2).toMatchObject({ unique: 3, duplicates: 1, exists: 2, none: 1 });
  });
});
