/**
 * The daemon as a process (spawned: the process itself is the subject).
 * #9.1c two `msgflow start` on one store; #9.7 `msgflow start` stays up with
 * nothing to schedule; SIGHUP stops it gracefully (#8.13).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exited, msgflow, msgflowDaemon, project } from './helpers.js';

const REMOTE_CONFIG = `instances:
  default:
    apiUrl: http://127.0.0.1:9
    idInstance: "1101000001"
    apiTokenInstance: daemon-test-token-4e1b
`;

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

describe('msgflow start (process)', () => {
  it('#9.7 with no local: section and no cron flow it stays up until stopped; #8.13 SIGHUP stops it gracefully (exit 0)', async () => {
    const dir = project({ 'config.yaml': REMOTE_CONFIG, 'flows/hello.yaml': STARTUP_FLOW });
    const d = await msgflowDaemon(['start'], dir, /started; /);
    try {
      await new Promise((r) => setTimeout(r, 1500));
      expect(d.child.exitCode).toBeNull();
      d.child.kill('SIGHUP');
      expect(await exited(d.child)).toBe(0);
      expect(d.output()).toMatch(/SIGHUP: stopping/);
    } finally {
      d.child.kill('SIGKILL');
    }
  });

  it('#9.1c two daemons on one store, started together: exactly one runs (startup flow once), the other refuses with its pid and host; 20 trials', async () => {
    let duplicates = 0;
    let refusedWithOwner = 0;
    for (let trial = 0; trial < 20; trial++) {
      const dir = project({ 'config.yaml': REMOTE_CONFIG, 'flows/hello.yaml': STARTUP_FLOW });
      const both = [msgflowDaemon(['start'], dir, /started; |already running/), msgflowDaemon(['start'], dir, /started; |already running/)];
      const ds = await Promise.all(both.map((p) => p.catch((e: Error) => ({ error: e.message }))));
      const outputs: string[] = [];
      for (const d of ds) {
        if ('error' in d) {
          outputs.push(d.error);
          continue;
        }
        if (/already running/.test(d.output())) {
          const code = await exited(d.child);
          outputs.push(`${code} ${d.output()}`);
        } else {
          // The startup run is recorded before the winner is stopped.
          const t0 = Date.now();
          while (runsIn(dir).length === 0 && Date.now() - t0 < 15_000) await new Promise((r) => setTimeout(r, 50));
          d.child.kill('SIGTERM');
          await exited(d.child);
          outputs.push(d.output());
        }
      }
      const started = outputs.filter((o) => /started; /.test(o)).length;
      const refusal = outputs.find((o) => /already running/.test(o)) ?? '';
      if (/msgflow start is already running on this store \(pid \d+ on host \S+\)/.test(refusal)) refusedWithOwner++;
      const runs = runsIn(dir);
      if (started !== 1 || runs.length !== 1) duplicates++;
    }
    expect({ duplicates, refusedWithOwner }).toEqual({ duplicates: 0, refusedWithOwner: 20 });
  }, 300_000);

  it('#9.1c a second start beside a running one exits 2', async () => {
    const dir = project({ 'config.yaml': REMOTE_CONFIG, 'flows/hello.yaml': STARTUP_FLOW });
    const d = await msgflowDaemon(['start'], dir, /started; /);
    try {
      const second = await msgflow(['start'], dir);
      expect(second.code).toBe(2);
      expect(second.stderr).toMatch(new RegExp(`already running on this store \\(pid ${d.child.pid} on host `));
    } finally {
      d.child.kill('SIGTERM');
      await exited(d.child);
    }
  });
});
