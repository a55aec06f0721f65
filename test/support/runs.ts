/**
 * Stored runs as the engine leaves them, written straight to a store: for
 * the tests and the bench of what reads or deletes finished runs (retention).
 */
import type { EngineStore, RunRecord, RunStatus } from '../../src/store/types.js';

/**
 * A run as one dialog message's run leaves it: its record, inputs, one step
 * with its item, a line of its run log and run state, started `durationMs`
 * before `finishedAt`. A status that has not ended (`running`, `waiting`,
 * `interrupted`) keeps no finish time. The journal is `run-log` and the run
 * state namespace `run:<id>`: bench/retention.ts's peer deletes these keys.
 */
export async function storeRun(
  store: EngineStore,
  id: string,
  o: { flow: string; finishedAt: number; status?: RunStatus; durationMs?: number },
): Promise<RunRecord> {
  const durationMs = o.durationMs ?? 50;
  const status = o.status ?? 'succeeded';
  const run: RunRecord = {
    id,
    flow: o.flow,
    status: 'running',
    trigger: 'notification',
    dryRun: false,
    startedAt: o.finishedAt - durationMs,
    updatedAt: o.finishedAt - durationMs,
    itemsDone: 0,
    itemsFailed: 0,
    resumes: 0,
  };
  await store.createRun(run);
  await store.saveInputs(id, { chat: '79001112233@c.us' });
  await store.saveStep({
    runId: id,
    step: 'answer',
    action: 'message.send',
    status: 'succeeded',
    startedAt: run.startedAt,
    done: 1,
    failed: 0,
    forEach: false,
  });
  await store.appendItems(id, [{ step: 'answer', index: 0, status: 'succeeded', attempts: 1, finishedAt: o.finishedAt }]);
  await store.appendJournal(id, 'run-log', [{ level: 'info', message: 'answered' }]);
  await store.kv(`run:${id}`).set('state', { node: 'menu' });
  if (status === 'running' || status === 'waiting' || status === 'interrupted') return store.updateRun(id, { status });
  return store.updateRun(id, { status, finishedAt: o.finishedAt, durationMs, itemsDone: 1 });
}
