/** `msgflow backfill FLOW --from T1 --to T2` in this process (the daemon's side: test/daemon/engine-client-conformance.ts). */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { backfillRunId } from '../../src/engine/schedule/backfill.js';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { cli } from '../support/cli.js';
import { project, remoteConfig } from '../support/project.js';

const FLOW = `name: weekday-report
on:
  schedule: { cron: '0 9 * * 1-5', timezone: Europe/Berlin }
steps:
  - id: say
    uses: log
    with: { message: "report for \${{ formatDate(run.slot, 'YYYY-MM-DD HH:mm', 'Europe/Berlin') }}" }
`;
const CONFIG = `${remoteConfig('backfill-test-token-77')}store: { driver: lowdb, dir: .msgflow/state }\n`;

describe('msgflow backfill', () => {
  it('runs each schedule slot of the range once, marked backfill with its slot; a second backfill of the range starts nothing', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'flows/weekday-report.yaml': FLOW });
    // Fri 2 Jan to Wed 7 Jan 2026: Fri, Mon, Tue, Wed at 09:00 Berlin (08:00 UTC); the weekend has no slot.
    const r = await cli(['backfill', 'weekday-report', '--from', '2026-01-02', '--to', '2026-01-07T23:59:59Z'], dir);
    expect(r.code, r.stderr).toBe(0);
    const slots = [2, 5, 6, 7].map((d) => Date.UTC(2026, 0, d, 8));
    expect(r.stdout).toContain(
      'backfill weekday-report: 4 slot(s) from 2026-01-02T00:00:00.000Z to 2026-01-07T23:59:59.000Z, 4 run(s) started',
    );
    for (const s of slots) expect(r.stdout).toContain(`${new Date(s).toISOString()}  ${backfillRunId('weekday-report', s)}  succeeded`);
    for (const d of ['2026-01-02', '2026-01-05', '2026-01-06', '2026-01-07']) expect(r.stderr).toContain(`report for ${d} 09:00`);

    const again = await cli(['backfill', 'weekday-report', '--from', '2026-01-02', '--to', '2026-01-08T23:59:59Z', '--json'], dir);
    expect(again.code, again.stderr).toBe(0);
    const out = JSON.parse(again.stdout) as { slots: Array<{ slot: number; runId: string; existing?: string; status: string }> };
    expect(out.slots.map((s) => s.existing)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded', undefined]);
    expect(out.slots.at(-1)).toMatchObject({ slot: Date.UTC(2026, 0, 8, 8), status: 'succeeded' });

    const store = createLowdbStore({ dir: path.join(dir, '.msgflow/state') });
    try {
      const runs = await store.listRuns({ flow: 'weekday-report' });
      expect(runs).toHaveLength(5);
      for (const run of runs) {
        expect(run.trigger).toBe('backfill');
        expect(run.id).toBe(backfillRunId('weekday-report', run.slot!));
      }
    } finally {
      await store.close();
    }
  });

  it('refuses a flow without a schedule, a reversed range and a time it cannot read, with exit 2', async () => {
    const dir = project({
      'config.yaml': CONFIG,
      'flows/weekday-report.yaml': FLOW,
      'flows/plain.yaml': 'name: plain\nsteps:\n  - { id: l, uses: log, with: { message: hi } }\n',
    });
    const plain = await cli(['backfill', 'plain', '--from', '2026-01-01', '--to', '2026-01-02'], dir);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain("cannot backfill flow 'plain': it has no on.schedule");
    const reversed = await cli(['backfill', 'weekday-report', '--from', '2026-01-09', '--to', '2026-01-02'], dir);
    expect(reversed.code).toBe(2);
    expect(reversed.stderr).toContain('--to 2026-01-02T00:00:00.000Z is before --from 2026-01-09T00:00:00.000Z');
    const badTime = await cli(['backfill', 'weekday-report', '--from', 'last tuesday', '--to', '2026-01-02'], dir);
    expect(badTime.code).toBe(2);
    expect(badTime.stderr).toContain(
      "--from expects an ISO 8601 time (e.g. 2026-01-05T09:00:00Z) or ms since the epoch, got 'last tuesday'",
    );
    const missing = await cli(['backfill', 'weekday-report', '--from', '2026-01-02'], dir);
    expect(missing.code).toBe(2);
    const many = await cli(['backfill', 'weekday-report', '--from', '2020-01-01', '--to', '2026-01-01'], dir);
    expect(many.code).toBe(2);
    expect(many.stderr).toContain('more than 1000 slots');
  });
});
