/**
 * The daemon as a process (spawned: the process itself is the subject).
 * #9.1c two `msgflow start` on one store; #9.7 `msgflow start` stays up with
 * nothing to schedule; SIGTERM stops it gracefully; SIGHUP reloads config.yaml
 * and flows (#15) instead of stopping it.
 */
import { readdirSync, writeFileSync } from 'node:fs';
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
  it('#9.7 with no local: section and no cron flow it stays up until stopped; SIGTERM stops it gracefully (exit 0)', async () => {
    const dir = project({ 'config.yaml': REMOTE_CONFIG, 'flows/hello.yaml': STARTUP_FLOW });
    const d = await msgflowDaemon(['start', '--no-ui'], dir, /started; /);
    try {
      await new Promise((r) => setTimeout(r, 1500));
      expect(d.child.exitCode).toBeNull();
      d.child.kill('SIGTERM');
      expect(await exited(d.child)).toBe(0);
      expect(d.output()).toMatch(/SIGTERM: stopping/);
    } finally {
      d.child.kill('SIGKILL');
    }
  });

  it('#15 SIGHUP reloads: a changed schedule and an added flow take effect, a broken flow keeps its last good version, a broken config.yaml is kept out; the daemon stays up', async () => {
    const cron = (name: string, expr: string) => `name: ${name}\non: { schedule: { cron: "${expr}", timezone: UTC } }\nsteps:\n  - id: say\n    uses: log\n    with: { message: hi }\n`;
    const dir = project({ 'config.yaml': REMOTE_CONFIG, 'flows/hello.yaml': STARTUP_FLOW, 'flows/check-leads.yaml': cron('check-leads', '0 9 * * 1-5') });
    const d = await msgflowDaemon(['start', '--no-ui'], dir, /started; /);
    const seen = async (re: RegExp, from: number) => {
      for (let i = 0; i < 600 && !re.test(d.output().slice(from)); i++) await new Promise((r) => setTimeout(r, 100));
      return d.output().slice(from);
    };
    try {
      writeFileSync(join(dir, 'flows/check-leads.yaml'), cron('check-leads', '30 8 * * 1-5'));
      writeFileSync(join(dir, 'flows/nightly.yaml'), cron('nightly', '0 2 * * *'));
      writeFileSync(join(dir, 'flows/hello.yaml'), STARTUP_FLOW.replace('uses: log', 'uses: no.such.action'));
      let from = d.output().length;
      d.child.kill('SIGHUP');
      let out = await seen(/reloaded: /, from);
      expect(out).toContain('reloaded: 1 flow changed (check-leads: schedule 0 9 * * 1-5 UTC → 30 8 * * 1-5 UTC), 1 added (nightly), 0 removed, 1 invalid');
      expect(out).toMatch(/flows[/\\]hello\.yaml:\d+:\d+ steps\[0\]\.uses/);
      expect(out).toContain("flow 'hello' keeps its last good version");

      writeFileSync(join(dir, 'config.yaml'), REMOTE_CONFIG + 'flowsDir: [1]\n');
      from = d.output().length;
      d.child.kill('SIGHUP');
      out = await seen(/reloaded: /, from);
      expect(out).toMatch(/config\.yaml not taken, the running config stays:\n.*config\.yaml:\d+:\d+/);
      expect(d.child.exitCode).toBeNull();
      expect(d.output()).not.toContain('daemon-test-token');

      d.child.kill('SIGTERM');
      expect(await exited(d.child)).toBe(0);
    } finally {
      d.child.kill('SIGKILL');
    }
  }, 120_000);

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
