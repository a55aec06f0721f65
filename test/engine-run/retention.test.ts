/**
 * Run retention: the finished runs older than the retention are deleted with
 * their items, journals and state (on disk: their directory goes), a batch at
 * a time; unfinished runs and recent ones stay; the daemon does it at start
 * and every hour on its clock, and tells it in a log line and a metric.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDaemon } from '../../src/index.js';
import { createBus } from '../../src/engine/events.js';
import { pruneRuns, startRetention } from '../../src/engine/run/retention.js';
import { busLogger } from '../../src/engine/run/engine.js';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { runItemsNamespace, type EngineStore, type RunRecord, type RunStatus } from '../../src/store/types.js';
import { ManualClock } from '../../src/util/clock.js';
import { storeRun } from '../support/runs.js';
import { waitFor } from '../support/wait.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-06-01T12:00:00Z');

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-retention-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function lowdb(dir: string): EngineStore {
  const store = createLowdbStore({ dir });
  cleanups.push(() => store.close());
  return store;
}

/** A run as the engine leaves it (test/support/runs.ts), with a record of the BullMQ workers' too, that ended `agoDays` before T0. */
async function runEnded(store: EngineStore, id: string, o: { flow?: string; status?: RunStatus; agoDays?: number }): Promise<RunRecord> {
  const run = await storeRun(store, id, {
    flow: o.flow ?? 'reply',
    status: o.status,
    finishedAt: T0 - (o.agoDays ?? 0) * DAY,
    durationMs: 2_000,
  });
  await store.kv(runItemsNamespace(id)).set('answer/0', { status: 'succeeded' });
  return run;
}

describe('run retention', () => {
  it('deletes the finished runs that ended before the retention, files and all; unfinished and recent runs stay', async () => {
    const dir = tempDir();
    const store = lowdb(dir);
    await runEnded(store, 'old-ok', { agoDays: 40 });
    await runEnded(store, 'old-failed', { status: 'failed', agoDays: 31 });
    await runEnded(store, 'old-cancelled', { flow: 'campaign', status: 'cancelled', agoDays: 90 });
    await runEnded(store, 'recent', { agoDays: 29 });
    await runEnded(store, 'waiting-long', { status: 'waiting', agoDays: 60 });
    await runEnded(store, 'interrupted-long', { status: 'interrupted', agoDays: 60 });
    const bus = createBus();
    const told: unknown[] = [];
    bus.on('runs:deleted', (e) => told.push(e));

    // Batches of 2: the deletion goes on until nothing older is left.
    const r = await pruneRuns(store, { olderThanMs: 30 * DAY, now: T0, batch: 2, bus });
    expect(r).toEqual({ cutoff: T0 - 30 * DAY, deleted: 3, byFlow: { reply: 2, campaign: 1 }, dryRun: false });
    expect(told).toEqual([{ deleted: 3, byFlow: { reply: 2, campaign: 1 }, cutoff: T0 - 30 * DAY }]);
    const left = (await store.listRuns()).map((x) => x.id).sort();
    expect(left).toEqual(['interrupted-long', 'recent', 'waiting-long']);
    expect(readdirSync(path.join(dir, 'runs')).sort()).toEqual(['interrupted-long', 'recent', 'waiting-long']);
    // The workers' records of the deleted runs (kv/run-items%3A<id>.<g>.jsonl) went with them.
    const itemFiles = readdirSync(path.join(dir, 'kv')).map((f) => decodeURIComponent(f.split('.')[0]!));
    expect([...new Set(itemFiles)].sort()).toEqual(['run-items:interrupted-long', 'run-items:recent', 'run-items:waiting-long']);
    // Another process opening the store sees the same.
    const other = lowdb(dir);
    expect((await other.listRuns()).map((x) => x.id).sort()).toEqual(left);
    expect(await other.getRun('old-ok')).toBeUndefined();
    // Nothing more is old enough: a second pass deletes nothing and tells nothing.
    expect((await pruneRuns(other, { olderThanMs: 30 * DAY, now: T0, bus })).deleted).toBe(0);
    expect(told).toHaveLength(1);
  });

  it('a dry run counts what would go and deletes nothing; flow limits it to one flow', async () => {
    const store = lowdb(tempDir());
    await runEnded(store, 'a', { agoDays: 40 });
    await runEnded(store, 'b', { flow: 'campaign', agoDays: 40 });
    expect(await pruneRuns(store, { olderThanMs: 30 * DAY, now: T0, dryRun: true })).toMatchObject({ deleted: 2, dryRun: true });
    expect((await store.listRuns()).length).toBe(2);
    expect(await pruneRuns(store, { olderThanMs: 30 * DAY, now: T0, flow: 'campaign' })).toMatchObject({
      deleted: 1,
      byFlow: { campaign: 1 },
    });
    expect((await store.listRuns()).map((x) => x.id)).toEqual(['a']);
  });

  it('refuses a retention under a day: a notification is redelivered for up to 24 hours, and its run is how it is known', async () => {
    const store = lowdb(tempDir());
    await expect(pruneRuns(store, { olderThanMs: 2 * 3_600_000, now: T0 })).rejects.toMatchObject({
      code: 'USAGE',
      message: expect.stringContaining('a retention of 2h is too short: runs are kept at least 1d'),
    });
    expect(() =>
      startRetention({ store, clock: new ManualClock(T0), logger: busLogger(createBus()), bus: createBus(), retentionMs: 1000 }),
    ).toThrow(/store\.retention: a retention of 1s is too short/);
  });

  it('the daemon deletes at start, then every hour of its clock what has aged past store.retention; a log line and the metric tell it', async () => {
    const dir = tempDir();
    writeFileSync(
      path.join(dir, 'config.yaml'),
      `instances: {}
flowsDir: flows
store: { driver: lowdb, dir: state, retention: 30d }
ui: { port: 0 }
logLevel: error
`,
    );
    const store = lowdb(path.join(dir, 'state'));
    await runEnded(store, 'ended-40d-ago', { agoDays: 40 });
    await runEnded(store, 'ended-29d-ago', { agoDays: 29 });
    await runEnded(store, 'waiting', { status: 'waiting', agoDays: 45 });
    await store.close();

    const clock = new ManualClock(T0);
    const daemon = createDaemon({ config: path.join(dir, 'config.yaml'), listen: false, clock });
    cleanups.push(() => daemon.stop());
    const logged: string[] = [];
    daemon.bus.on('runs:deleted', (e) => logged.push(`${e.deleted} ${Object.keys(e.byFlow).join()}`));
    const status = await daemon.start();
    // What msgflow start words as "finished runs older than 30d are deleted hourly (store.retention)".
    expect(status.retentionMs).toBe(30 * DAY);
    const ids = async () => (await daemon.client.listRuns({ limit: 10 })).map((r) => r.id).sort();
    await waitFor('the run 40 days old to be deleted at start', async () => !(await ids()).includes('ended-40d-ago'));
    expect(await ids()).toEqual(['ended-29d-ago', 'waiting']);
    expect(existsSync(path.join(dir, 'state', 'runs', 'ended-40d-ago'))).toBe(false);

    // A day and an hour later the other one is past 30 days too: the hourly pass takes it.
    await clock.advance(DAY + 3_600_000);
    await waitFor('the hourly pass', async () => !(await ids()).includes('ended-29d-ago'));
    expect(await ids()).toEqual(['waiting']);
    // Told once a pass is over (its deletions are visible a little before).
    await waitFor('both passes told', () => logged.length >= 2);
    expect(logged).toEqual(['1 reply', '1 reply']);
    const metrics = await (await fetch(`${status.dashboard}/metrics`)).text();
    expect(metrics).toMatch(/^msgflow_runs_deleted_total\{flow="reply"\} 2$/m);
  });
});
