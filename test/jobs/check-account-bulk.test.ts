import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { parse as parseCsv } from 'csv-parse/sync';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkAccountBulk, CHECK_REPORT_COLUMNS } from '../../src/actions/check-account-bulk.js';
import { createActionTestContext, runAction, type ActionTestOptions } from '../../src/actions/testing.js';
import { createClient } from '../../src/client/client.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { csvLine } from '../../src/actions/kit/report.js';
import { ID, localConfig, startLocal, tempDir, writeData, type LocalUnderTest } from '../support/local-service.js';
import { waitFor } from '../support/wait.js';

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

const withBlock = (over: Record<string, unknown> = {}) => ({
  file: 'data/leads.csv',
  pace: { delay: 0, jitter: 0 },
  report: 'reports/leads.csv',
  ...over,
});

/** Successful (not rate-limited) checks per phone number that reached the service. */
function checksPerNumber(l: LocalUnderTest, into = new Map<number, number>()): Map<number, number> {
  for (const r of l.requests) {
    if (r.method !== 'checkAccount') continue;
    const a = r.answer as { status?: boolean };
    if (a && a.status === false) continue;
    const phone = Number((r.body as { phoneNumber: number }).phoneNumber);
    into.set(phone, (into.get(phone) ?? 0) + 1);
  }
  return into;
}

function ctxFor(o: Omit<ActionTestOptions, 'clock'> & { clock: ManualClock }) {
  return createActionTestContext(o);
}

describe('checkAccount.bulk', () => {
  it('pauses the instance on rate_limit_exceeded (one record in pauses, keyed by identity), survives a restart, never re-checks a number', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', LEADS);
    const clock = new ManualClock(T0);
    const store = createMemoryStore();

    // ---- first process: 4 distinct checks, the 5th hits the service's limit
    const l1 = await start(dir, clock);
    const t1 = ctxFor({ client: l1.client, clock, store, baseDir: dir });
    // One record at a time: with records in flight over HTTP, which of them the service's limit of 4
    // numbers refuses depends on which request arrives first, and so does how many commit before it.
    const run1 = runAction(checkAccountBulk, t1, withBlock({ inFlight: 1 }));
    run1.catch(() => undefined);
    await t1.waiting;
    const pause = await store.kv('shared:pauses').get<Record<string, unknown>>('inst-test:checkAccount');
    expect(pause).toMatchObject({
      instance: 'default',
      identity: 'inst-test',
      scope: 'checkAccount',
      until: T0 + 2 * HOUR,
      since: T0,
      retryAfterMs: 60_000,
    });
    expect(pause?.reason).toMatch(/rate_limit_exceeded/);
    expect(t1.waits[0]!.reason).toMatch(/rate_limit_exceeded/);
    expect(t1.events.map((e) => e.name)).toContain('checkAccount.paused');
    // The 4th answer may still be committing when the 5th meets the pause.
    await waitFor('the 4 checks before the pause to be committed', () => t1.progress.at(-1)?.done === 4);
    expect(t1.progress.at(-1)).toMatchObject({ done: 4, waiting: 1 }); // waiting, not an ETA
    // kill the "process" in the middle of the pause
    t1.abort(new Error('killed'));
    await expect(run1).rejects.toThrow();
    await l1.close();
    open = open.filter((x) => x !== l1);

    // ---- restart: same store, a new service process on the same data
    await clock.advance(HOUR);
    const l2 = await start(dir, clock);
    const t2 = ctxFor({ client: l2.client, clock, store, baseDir: dir });
    const run2 = runAction(checkAccountBulk, t2, withBlock({ inFlight: 1 }));
    await t2.waiting;
    expect(t2.waits[0]!.until).toBe(T0 + 2 * HOUR); // same wake time, only the rest is slept
    expect(l2.requests.filter((r) => r.method === 'checkAccount')).toHaveLength(0);
    await clock.advance(HOUR);
    const summary = await run2;

    expect(summary).toMatchObject({ total: 8, unique: 6, duplicates: 1, invalid: 1, exists: 3, none: 3, failed: 0, pauses: 1 });
    const counts = checksPerNumber(l2, checksPerNumber(l1));
    expect([...counts.keys()].sort()).toEqual([79001112233, 79002223344, 79003334455, 79005550000, 79009990001, 79009990002]);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);

    // the report holds each record once, across the restart
    const csv = await readFile(path.join(dir, 'reports/leads.csv'), 'utf8');
    const lines = csv.trimEnd().split('\r\n');
    expect(lines[0]).toBe(CHECK_REPORT_COLUMNS.join(','));
    expect(lines).toHaveLength(1 + 8);
    expect(csv).toMatch(/79001112233.*exists.*79001112233@c\.us/);
    expect(csv).toMatch(/8-800-bad.*invalid/);
    expect(t2.progress.at(-1)).toEqual({ done: 6, total: 8, failed: 0, invalid: 1, duplicate: 1, skipped: 0, waiting: 0 });
  });

  it('reuses results within the TTL, never re-checks a nonexistent number even with force, and re-checks after the TTL', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', 'phone\n79001112233\n79009990001\n');
    const clock = new ManualClock(T0);
    const store = createMemoryStore();
    const l = await start(dir, clock, { checkAccountLimit: { numbers: 100, windowMinutes: 10, retryAfterSeconds: 60 } });
    const run = (id: string, over: Record<string, unknown> = {}) =>
      runAction(
        checkAccountBulk,
        ctxFor({ client: l.client, clock, store, baseDir: dir, runId: id }),
        withBlock({ ...over, report: `reports/${id}.json` }),
      );

    expect(await run('a')).toMatchObject({ exists: 1, none: 1, checked: 2, fromCache: 0 });
    expect(await run('b')).toMatchObject({ exists: 1, none: 1, checked: 0, fromCache: 2 });
    const forced = await run('c', { force: true });
    expect(forced).toMatchObject({ exists: 1, none: 1, checked: 1, fromCache: 1 });
    const last = l.requests.filter((r) => r.method === 'checkAccount').at(-1)!;
    expect(last.body).toEqual({ phoneNumber: 79001112233, force: true });
    const json = JSON.parse(await readFile(path.join(dir, 'reports/c.json'), 'utf8'));
    expect(json.rows.find((r: { phone: number }) => r.phone === 79009990001)).toMatchObject({ status: 'none', source: 'cache' });
    expect(json.summary).toMatchObject({ exists: 1, none: 1 });

    await clock.advance(24 * HOUR + 1);
    expect(await run('d')).toMatchObject({ checked: 2, fromCache: 0 });
    expect(l.requests.filter((r) => r.method === 'checkAccount')).toHaveLength(5);
  });

  it('a run answered wholly from the cache still makes its first call to the service: a wrong token stops it, not hidden by the cache', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', 'phone\n79001112233\n79009990001\n');
    const clock = new ManualClock(T0);
    const store = createMemoryStore();
    const l = await start(dir, clock);
    const run = (id: string, client: typeof l.client) =>
      runAction(checkAccountBulk, ctxFor({ client, clock, store, baseDir: dir, runId: id }), withBlock({ report: `reports/${id}.csv` }));
    expect(await run('a', l.client)).toMatchObject({ checked: 2, fromCache: 0 });
    // Every number is in the cache now: the right token still gets its answers from it...
    expect(await run('b', l.client)).toMatchObject({ checked: 0, fromCache: 2 });
    expect(l.requests.filter((r) => r.method === 'checkAccount')).toHaveLength(2);
    // ...a wrong one is refused by the service before any cached answer is given.
    const err = await run('c', l.clientWith('wrong-token-0000')).then(
      () => undefined,
      (e: unknown) => e as Error & { code: string },
    );
    expect(err?.code).toBe('JOB_STOPPED');
    expect(err?.message).toMatch(/refused the token of instance 'default' \(HTTP 401\): check apiTokenInstance/);
  });

  it('a wrong token stops checkAccount.bulk at the first call, saying what to fix', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', LEADS);
    const clock = new ManualClock(T0);
    const l = await start(dir, clock);
    const t = ctxFor({ client: l.clientWith('wrong-token-0000'), clock, baseDir: dir });
    const err = await runAction(checkAccountBulk, t, withBlock()).catch((e) => e);
    expect(err.code).toBe('JOB_STOPPED');
    expect(err.message).toMatch(/refused the token of instance 'default' \(HTTP 401\): check apiTokenInstance/);
    expect(err.message).not.toContain('wrong-token-0000');
    expect(l.requests.filter((r) => r.method === 'checkAccount')).toHaveLength(1);
  });

  it('an instance that is not authorized stops the job at the first check with what to do', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', 'phone\n79001112233\n79002223344\n');
    const clock = new ManualClock(T0);
    const l = await start(dir, clock, { state: 'notAuthorized' });
    const err = await runAction(checkAccountBulk, ctxFor({ client: l.client, clock, baseDir: dir }), withBlock()).catch((e) => e);
    expect(err.code).toBe('JOB_STOPPED');
    expect(err.message).toMatch(/instance 'default' is not ready \(.*notAuthorized.*\): authorize it/);
    expect(l.requests.filter((r) => r.method === 'checkAccount')).toHaveLength(1);
  });

  it('a run of server errors stops the job (consecutive-failure guard); each is recorded, retryable, and checked again by the next attempt', async () => {
    const dir = await tempDir();
    const store = createMemoryStore();
    await writeData(dir, 'data/leads.csv', LEADS);
    let hits = 0;
    const server = http.createServer((req, res) => {
      hits++;
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"message":"down"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const client = createClient({ apiUrl: url, idInstance: ID, apiTokenInstance: 'token-123456', rateLimit: false, retries: 0 });
    try {
      const clock = new ManualClock(T0);
      const t = ctxFor({ client, clock, store, baseDir: dir });
      const err = await runAction(checkAccountBulk, t, withBlock({ maxConsecutiveFailures: 3 })).catch((e) => e);
      expect(err.code).toBe('JOB_STOPPED');
      expect(err.message).toMatch(/3 calls in a row failed \(last: checkAccount failed with HTTP 503: down\)/);
      expect(hits).toBe(3);
      const csv = await readFile(path.join(dir, 'reports/leads.csv'), 'utf8');
      expect(csv.match(/,failed,/g)).toHaveLength(3); // the third, which stopped the job, is one of them

      // the service is back: the step's next attempt checks the failed ones again, each row once in the report
      const l = await start(dir, clock, { checkAccountLimit: { numbers: 100, windowMinutes: 10, retryAfterSeconds: 60 } });
      const s = await runAction(checkAccountBulk, ctxFor({ client: l.client, clock, store, baseDir: dir }), withBlock());
      expect(s).toMatchObject({ failed: 0, exists: 3, none: 3, invalid: 1 });
      const lines = (await readFile(path.join(dir, 'reports/leads.csv'), 'utf8')).trimEnd().split('\r\n');
      expect(lines).toHaveLength(1 + 8);
    } finally {
      await client.close();
      await new Promise((r) => server.close(r));
    }
  });

  it('with records in flight, calls overlap and are answered out of order, yet the report keeps the input order and each number is checked once', async () => {
    const dir = await tempDir();
    const numbers = Array.from({ length: 60 }, (_, i) => 79001000000 + i);
    await writeData(dir, 'data/leads.csv', `phone\n${numbers.join('\n')}\n79001000003\nbad\n`);
    const checked = new Map<number, number>();
    let open = 0;
    let mostAtOnce = 0;
    // Each answer comes later the earlier its number is in the file: the calls finish in reverse.
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const { phoneNumber } = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { phoneNumber?: number };
        if (phoneNumber === undefined)
          return res.writeHead(200, { 'content-type': 'application/json' }).end('{"stateInstance":"authorized"}');
        checked.set(phoneNumber, (checked.get(phoneNumber) ?? 0) + 1);
        mostAtOnce = Math.max(mostAtOnce, ++open);
        const body = JSON.stringify({ exist: phoneNumber % 2 === 0, chatId: phoneNumber % 2 === 0 ? `${phoneNumber}@c.us` : '' });
        setTimeout(
          () => {
            open--;
            res.writeHead(200, { 'content-type': 'application/json' }).end(body);
          },
          2 + ((79001000060 - phoneNumber) % 8),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const client = createClient({ apiUrl: url, idInstance: ID, apiTokenInstance: 'token-123456', rateLimit: false, retries: 0 });
    try {
      const t = ctxFor({ client, clock: new ManualClock(T0), baseDir: dir });
      const s = await runAction(checkAccountBulk, t, withBlock({ inFlight: 8 }));
      expect(s).toMatchObject({ total: 62, unique: 60, exists: 30, none: 30, duplicates: 1, invalid: 1, failed: 0 });
      expect(mostAtOnce).toBeGreaterThan(1);
      expect(mostAtOnce).toBeLessThanOrEqual(8);
      expect([...checked.keys()].sort()).toEqual(numbers);
      expect([...checked.values()].every((n) => n === 1)).toBe(true);
      const rows = parseCsv(await readFile(path.join(dir, 'reports/leads.csv'), 'utf8'), { columns: true }) as Array<
        Record<string, string>
      >;
      expect(rows.map((r) => r.input)).toEqual([...numbers.map(String), '79001000003', 'bad']);
      expect(rows.map((r) => r.status).slice(-2)).toEqual(['duplicate', 'invalid']);
    } finally {
      await client.close();
      await new Promise((r) => server.close(r));
    }
  });

  it('reports every duplicate as its own row, `duplicate of <file>:<line>` naming the first, and keeps each row once across a restart', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', LEADS);
    const clock = new ManualClock(T0);
    const store = createMemoryStore();
    const l = await start(dir, clock, { checkAccountLimit: { numbers: 100, windowMinutes: 10, retryAfterSeconds: 60 } });
    const t1 = ctxFor({ client: l.client, clock, store, baseDir: dir });
    const s = await runAction(checkAccountBulk, t1, withBlock());
    expect(s).toMatchObject({ total: 8, unique: 6, duplicates: 1, invalid: 1 });
    const rows = () =>
      readFile(path.join(dir, 'reports/leads.csv'), 'utf8').then((t) => parseCsv(t, { columns: true }) as Record<string, string>[]);
    const first = await rows();
    // one row per input row: the report accounts for every row the job read
    expect(first.map((r) => r.where).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `data/leads.csv:${i + 2}`).sort());
    expect(first.find((r) => r.where === 'data/leads.csv:7')).toMatchObject({
      phone: '79001112233',
      status: 'duplicate',
      error: 'duplicate of data/leads.csv:2',
    });
    // the same run resumed (its journal replayed): the duplicate row is written again, once
    const calls = l.requests.length;
    const again = await runAction(checkAccountBulk, ctxFor({ client: l.client, clock, store, baseDir: dir }), withBlock());
    expect(again).toMatchObject({ total: 8, duplicates: 1 });
    expect(l.requests.length).toBe(calls);
    expect(await rows()).toEqual(first);
  });

  it('the check that makes maxConsecutiveFailures in a row is counted failed: counters, report and stop reason agree', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', LEADS);
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"message":"down"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const client = createClient({ apiUrl: url, idInstance: ID, apiTokenInstance: 'token-123456', rateLimit: false, retries: 0 });
    try {
      const clock = new ManualClock(T0);
      const t = ctxFor({ client, clock, baseDir: dir });
      const err = await runAction(checkAccountBulk, t, withBlock({ maxConsecutiveFailures: 4 })).catch((e) => e);
      expect(err.message).toMatch(/4 calls in a row failed/);
      expect(t.progress.at(-1)).toMatchObject({ done: 0, failed: 4 });
      const csv = await readFile(path.join(dir, 'reports/leads.csv'), 'utf8');
      expect(csv.match(/,failed,/g)).toHaveLength(4);
    } finally {
      await client.close();
      await new Promise((r) => server.close(r));
    }
  });

  it('caches and pauses are keyed by the instance identity, not its config name', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', 'phone\n79001112233\n');
    const clock = new ManualClock(T0);
    const store = createMemoryStore();
    const l = await start(dir, clock, { checkAccountLimit: { numbers: 100, windowMinutes: 10, retryAfterSeconds: 60 } });
    const demo = { name: 'default', identity: 'inst-demo' };
    const real = { name: 'default', identity: 'inst-real' };
    await runAction(checkAccountBulk, ctxFor({ client: l.client, clock, store, baseDir: dir, runId: 'a', instance: demo }), withBlock());
    expect(await store.kv('shared:checkAccount:inst-demo').get('n:79001112233')).toMatchObject({ e: true });
    // `default` now points at another instance: nothing of the demo's is reused
    const s = await runAction(
      checkAccountBulk,
      ctxFor({ client: l.client, clock, store, baseDir: dir, runId: 'b', instance: real }),
      withBlock(),
    );
    expect(s).toMatchObject({ checked: 1, fromCache: 0 });
    expect(await store.kv('shared:checkAccount:default').entries()).toEqual([]);
  });

  it('a dry run predicts wouldCheck in the usual output shape and sends nothing', async () => {
    expect(checkAccountBulk.dryRun).toBe(true);
    const dir = await tempDir();
    const clock = new ManualClock(T0);
    const l = await start(dir, clock);
    const t = ctxFor({ client: l.client, clock, baseDir: dir, dryRun: true });
    const s1 = await runAction(
      checkAccountBulk,
      t,
      withBlock({ file: undefined, usernames: ['@alice', 'bob', '@nobody_here'], numbers: ['bad'] }),
    );
    expect(s1).toMatchObject({ unique: 3, invalid: 1, wouldCheck: 3, checked: 0, failed: 0, exists: 0 });
    expect(l.requests).toHaveLength(0);
    const s2 = await runAction(
      checkAccountBulk,
      ctxFor({ client: l.client, clock, baseDir: dir }),
      withBlock({ file: undefined, usernames: ['@alice', 'bob', '@nobody_here', '@ALICE'] }),
    );
    expect(s2).toMatchObject({ unique: 3, duplicates: 1, exists: 2, none: 1 });
    expect(s2).not.toHaveProperty('wouldCheck');
  });

  it('a domestic number written with its trunk prefix (8 800 555 35 35) is reported invalid and never checked', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', 'phone\n8 800 555 35 35\n79001112233\n');
    const clock = new ManualClock(T0);
    const l = await start(dir, clock);
    const s = await runAction(checkAccountBulk, ctxFor({ client: l.client, clock, baseDir: dir }), withBlock());
    expect(s).toMatchObject({ total: 2, invalid: 1, exists: 1, failed: 0 });
    expect([...checksPerNumber(l).keys()]).toEqual([79001112233]);
    const csv = await readFile(path.join(dir, 'reports/leads.csv'), 'utf8');
    expect(csv).toMatch(/8 800 555 35 35.*,invalid,.*trunk prefix 8/);
  });

  it('invalid numbers are counted invalid (not failed) in progress, summary and report alike', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/leads.csv', 'phone\n79001112233\n12\nabc\n79001112233\n');
    const clock = new ManualClock(T0);
    const l = await start(dir, clock);
    const t = ctxFor({ client: l.client, clock, baseDir: dir });
    const s = await runAction(checkAccountBulk, t, withBlock());
    expect(s).toMatchObject({ total: 4, invalid: 2, failed: 0, exists: 1, duplicates: 1 });
    expect(t.progress.at(-1)).toMatchObject({ done: 1, failed: 0, invalid: 2, duplicate: 1, skipped: 0, total: 4 });
    const csv = await readFile(path.join(dir, 'reports/leads.csv'), 'utf8');
    expect(csv.match(/,invalid,/g)).toHaveLength(2);
    expect(csv).not.toMatch(/,failed,/);
  });

  it('report columns are the same from run to run, whatever the outcomes', async () => {
    const dir = await tempDir();
    const clock = new ManualClock(T0);
    const l = await start(dir, clock);
    const header = async (id: string, numbers: unknown[]) => {
      await runAction(
        checkAccountBulk,
        ctxFor({ client: l.client, clock, baseDir: dir, runId: id }),
        withBlock({ file: undefined, numbers, report: `reports/${id}.csv` }),
      );
      return (await readFile(path.join(dir, `reports/${id}.csv`), 'utf8')).split('\r\n')[0];
    };
    expect(await header('only-invalid', ['bad'])).toBe(await header('checked', ['79001112233']));
  });

  it('streams a JSON array and JSON Lines input', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/a.json', JSON.stringify([{ phone: '79001112233' }, '79002223344', 79009990001]));
    await writeData(dir, 'data/b.jsonl', '{"phone":"79001112233"}\n\n"@alice"\n');
    const clock = new ManualClock(T0);
    const l = await start(dir, clock, { checkAccountLimit: { numbers: 100, windowMinutes: 10, retryAfterSeconds: 60 } });
    const a = await runAction(
      checkAccountBulk,
      ctxFor({ client: l.client, clock, baseDir: dir, runId: 'a' }),
      withBlock({ file: 'data/a.json' }),
    );
    expect(a).toMatchObject({ total: 3, exists: 2, none: 1 });
    const b = await runAction(
      checkAccountBulk,
      ctxFor({ client: l.client, clock, baseDir: dir, runId: 'b' }),
      withBlock({ file: 'data/b.jsonl' }),
    );
    expect(b).toMatchObject({ total: 2, exists: 2 });
    await writeData(dir, 'data/c.json', '{"phone":"79001112233"}');
    const err = await runAction(
      checkAccountBulk,
      ctxFor({ client: l.client, clock, baseDir: dir, runId: 'c' }),
      withBlock({ file: 'data/c.json' }),
    ).catch((e) => e);
    expect(err.message).toMatch(/data\/c\.json: must hold a list of records/);
  });

  it("names each row by the file's own line (blank lines and a quoted cell over two lines counted), and a row it cannot parse by its line", async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/l.csv', 'phone,name\r\n79001112233,Alice\r\n\r\n79002223344,"Bob\nthe second"\r\n79009990001,Nobody\r\n');
    await writeData(dir, 'data/l.jsonl', '"79001112233"\n\n{"phone":"79002223344"}\n');
    await writeData(dir, 'data/l.json', JSON.stringify(['79001112233', '79002223344']));
    const clock = new ManualClock(T0);
    const l = await start(dir, clock, { checkAccountLimit: { numbers: 100, windowMinutes: 10, retryAfterSeconds: 60 } });
    const where = async (file: string) => {
      const report = `reports/${file.replace(/\W/g, '_')}.csv`;
      await runAction(checkAccountBulk, ctxFor({ client: l.client, clock, baseDir: dir, runId: file }), withBlock({ file, report }));
      const rows = parseCsv(await readFile(path.join(dir, report), 'utf8'), { columns: true }) as Record<string, string>[];
      return rows.map((r) => r.where);
    };
    expect(await where('data/l.csv')).toEqual(['data/l.csv:2', 'data/l.csv:4', 'data/l.csv:6']);
    expect(await where('data/l.jsonl')).toEqual(['data/l.jsonl:1', 'data/l.jsonl:3']);
    expect(await where('data/l.json')).toEqual(['data/l.json[0]', 'data/l.json[1]']);
    await writeData(dir, 'data/bad.csv', 'phone,name\n79001112233,Alice\n\n79002223344,Bob,extra\n');
    const err = await runAction(
      checkAccountBulk,
      ctxFor({ client: l.client, clock, baseDir: dir, runId: 'bad' }),
      withBlock({ file: 'data/bad.csv' }),
    ).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/data\/bad\.csv:4: bad CSV/);
  });
});

describe('report cells', () => {
  it('cells starting with = + - @ TAB CR are escaped with a leading quote (OWASP CSV injection)', () => {
    const line = csvLine(['=1+2', "+cmd|' /C calc'!A0", '-2+3+cmd|x', '@SUM(A1)', '\t=1', '\r=1', 'plain', 79001112233, -5]);
    expect(line).toBe(`'=1+2,'+cmd|' /C calc'!A0,'-2+3+cmd|x,'@SUM(A1),'\t=1,"'\r=1",plain,79001112233,-5\r\n`);
  });
});
