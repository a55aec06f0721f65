/**
 * The daemon as a process (spawned: the process itself is the subject).
 * One `msgflow start` per store; `msgflow start` stays up with
 * nothing to schedule; SIGTERM stops it gracefully (exit 0), Ctrl-C too (exit
 * 130); SIGHUP reloads config.yaml
 * and the flows instead. The second
 * daemon beside a running one runs in-process: a different pid, as another
 * process would be.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { cli } from '../support/cli.js';
import { project, remoteConfig } from '../support/project.js';
import { spawnCli } from '../support/spawn.js';
import { waitFor } from '../support/wait.js';

const REMOTE_CONFIG = remoteConfig('daemon-test-token-4e1b');

const STARTUP_FLOW = `name: hello
on: { startup: true }
steps:
  - id: say
    uses: log
    with: { message: "hello from startup" }
`;

function runsIn(dir: string): string[] {
  try {
    return readdirSync(join(dir, '.msgflow/state/runs'));
  } catch {
    return [];
  }
}

/**
 * Trials of two daemons started together: one in `npm test` (whichever wins the lease, the other
 * must refuse), 20 in `npm run trials` (MSGFLOW_TRIALS); the same-instant claim itself runs 20
 * trials per store driver in-process (test/engine-run/ownership.test.ts).
 */
const TRIALS = Number(process.env.MSGFLOW_TRIALS ?? 1);

// The tests share nothing (a project folder and processes each): they run side by side.
describe.concurrent('msgflow start (process)', () => {
  it('with no local: section and no cron flow it stays up until stopped; a second start beside it exits 2 naming it; SIGTERM stops it gracefully (exit 0)', async ({
    expect,
  }) => {
    const dir = project({ 'config.yaml': REMOTE_CONFIG, 'flows/hello.yaml': STARTUP_FLOW });
    const d = spawnCli(['start', '--no-ui'], dir);
    try {
      await d.waitForOutput(/started; /);
      // No store.retention: it says the history is kept, and what would change that.
      expect(d.output()).toMatch(/^msgflow: run history: kept for good \(store\.retention sets how long\)$/m);
      // Its startup run is done and nothing else is scheduled: it is still up, answering a second start.
      await waitFor('the startup run', () => runsIn(dir).length === 1, { context: d.output });
      const second = await cli(['start', '--no-ui'], dir);
      expect(second.code).toBe(2);
      expect(second.stderr).toMatch(new RegExp(`already running on this store \\(pid ${d.child.pid} on host `));
      d.child.kill('SIGTERM');
      expect(await d.exited).toBe(0);
      expect(d.output()).toMatch(/SIGTERM: stopping/);
      expect(runsIn(dir)).toHaveLength(1);
    } finally {
      await d.kill();
    }
  });

  it('SIGHUP reloads: a changed schedule and an added flow take effect, a broken flow keeps its last good version, a broken config.yaml is kept out; the daemon stays up until Ctrl-C (SIGINT) stops it with exit 130', async ({
    expect,
  }) => {
    const cron = (name: string, expr: string) =>
      `name: ${name}\non: { schedule: { cron: "${expr}", timezone: UTC } }\nsteps:\n  - id: say\n    uses: log\n    with: { message: hi }\n`;
    const dir = project({
      'config.yaml': REMOTE_CONFIG,
      'flows/hello.yaml': STARTUP_FLOW,
      'flows/check-leads.yaml': cron('check-leads', '0 9 * * 1-5'),
    });
    const d = spawnCli(['start', '--no-ui'], dir);
    try {
      await d.waitForOutput(/started; /);
      writeFileSync(join(dir, 'flows/check-leads.yaml'), cron('check-leads', '30 8 * * 1-5'));
      writeFileSync(join(dir, 'flows/nightly.yaml'), cron('nightly', '0 2 * * *'));
      writeFileSync(join(dir, 'flows/hello.yaml'), STARTUP_FLOW.replace('uses: log', 'uses: no.such.action'));
      d.child.kill('SIGHUP');
      await d.waitForOutput(/reloaded: /);
      expect(d.output()).toContain(
        'reloaded: 1 flow changed (check-leads: schedule 0 9 * * 1-5 UTC → 30 8 * * 1-5 UTC), 1 added (nightly), 0 removed, 1 invalid',
      );
      expect(d.output()).toMatch(/flows[/\\]hello\.yaml:\d+:\d+ steps\[0\]\.uses/);
      expect(d.output()).toContain("flow 'hello' keeps its last good version");

      writeFileSync(join(dir, 'config.yaml'), REMOTE_CONFIG + 'flowsDir: [1]\n');
      d.child.kill('SIGHUP');
      await d.waitForOutput(/reloaded: [^\n]*\n[\s\S]*reloaded: /);
      expect(d.output()).toMatch(/config\.yaml not taken, the running config stays:\n.*config\.yaml:\d+:\d+/);
      expect(d.child.exitCode).toBeNull();
      expect(d.output()).not.toContain('daemon-test-token');

      // Ctrl-C: a graceful stop too, with the exit code shells give an interrupted command.
      d.child.kill('SIGINT');
      expect(await d.exited).toBe(130);
      expect(d.output()).toMatch(/SIGINT: stopping/);
    } finally {
      await d.kill();
    }
  }, 120_000);

  it(`two daemons on one store, started together: exactly one runs (startup flow once), the other refuses with its pid and host; ${TRIALS} trial(s)`, async ({
    expect,
  }) => {
    // The trials share nothing (a project folder each): they run side by side.
    const trial = async (): Promise<string> => {
      const dir = project({ 'config.yaml': REMOTE_CONFIG, 'flows/hello.yaml': STARTUP_FLOW });
      const ds = [spawnCli(['start', '--no-ui'], dir), spawnCli(['start', '--no-ui'], dir)];
      try {
        // The loser exits on its own; the winner stays up until stopped.
        const loser = await Promise.race(ds.map((p) => p.exited.then(() => p)));
        const winner = ds.find((p) => p !== loser)!;
        await winner.waitForOutput(/started; /);
        await waitFor('the startup run', () => runsIn(dir).length > 0, { context: winner.output });
        winner.child.kill('SIGTERM');
        return JSON.stringify({
          loser: await loser.exited,
          winner: await winner.exited,
          refusedWithOwner: /msgflow start is already running on this store \(pid \d+ on host \S+\)/.test(loser.stderr()),
          runs: runsIn(dir).length,
        });
      } finally {
        await Promise.all(ds.map((p) => p.kill()));
      }
    };
    const outcomes = await Promise.all(Array.from({ length: TRIALS }, trial));
    expect(outcomes).toEqual(Array(TRIALS).fill(JSON.stringify({ loser: 2, winner: 0, refusedWithOwner: true, runs: 1 })));
  });
});
