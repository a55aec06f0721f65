/**
 * `msgflow run FLOW` beside a daemon (in-process: the project's runtime and
 * dashboard stand in for `msgflow start`, holding its lease and its recorded
 * address): the run executes in the daemon, the terminal prints its progress
 * and summary and exits with its outcome; without a dashboard it runs here.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import type { Io } from '../../src/cli/output.js';
import { defaultHostId, LeaseOwner } from '../../src/engine/run/ownership.js';
import { recordDaemonUi } from '../../src/runtime/daemon/address.js';
import { startProject, type Project } from './helpers.js';
import { waitFor } from '../support/wait.js';

function memoryIo() {
  const out: string[] = [];
  const err: string[] = [];
  const stderr = new PassThrough();
  // The reporter's progress and log lines go to the stream; messages of the command to err().
  stderr.on('data', (c: Buffer) => err.push(c.toString('utf8')));
  const io: Io = { out: (t) => out.push(t), err: (t) => err.push(t), stdout: new PassThrough(), stderr };
  return { io, out, err };
}

const TOKEN = 'daemon-run-ui-token-0815';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A project whose runtime plays the daemon: it holds the daemon lease and records its dashboard (or none). */
async function daemonProject(opts: {
  ui: boolean;
  serverToken?: string;
  /** The local instance checks at its own pace (slow-check then takes seconds). @default false */
  paced?: boolean;
  /** More flows, by file name. @default none */
  flows?: Record<string, string>;
}): Promise<{ p: Project; config: string; daemonRuns: string[] }> {
  const p = await startProject({
    token: opts.serverToken ?? TOKEN,
    extraConfig: `ui:\n  token: ${TOKEN}\n`,
    unpaced: !opts.paced,
    ...(opts.flows ? { flows: opts.flows } : {}),
  });
  const owner = new LeaseOwner({ store: p.runtime.store, hostId: defaultHostId(), ttlMs: 30_000 }, { label: 'msgflow start' });
  expect((await owner.claim('daemon')).ok).toBe(true);
  await recordDaemonUi(p.runtime.store, {
    url: opts.ui ? p.url : null,
    reason: opts.ui ? undefined : 'started with --no-ui',
    pid: process.pid,
    host: defaultHostId(),
    startedAt: Date.now(),
  });
  const daemonRuns: string[] = [];
  p.runtime.bus.on('run:started', (e) => daemonRuns.push(e.runId));
  cleanups.push(async () => {
    await owner.release();
    await p.close();
  });
  return { p, config: path.join(p.dir, 'config.yaml'), daemonRuns };
}

describe('msgflow run beside a daemon', () => {
  it('hands the run to the daemon and prints its progress, summary and exit code', async () => {
    const { config, daemonRuns } = await daemonProject({ ui: true });
    const { io, out, err } = memoryIo();
    const code = await runCli(['run', 'check-some', '-c', config, '--log-level', 'info'], io);
    const stderr = err.join('\n');
    expect(code, stderr).toBe(0);
    const m = /run (\S+) of check-some executes in the daemon \(dashboard http:\/\/127\.0\.0\.1:\d+\/#\/runs\/(\S+)\)/.exec(stderr);
    expect(m, stderr).not.toBeNull();
    expect(daemonRuns).toEqual([m![1]]);
    // The daemon's engine events, printed here as a local run prints them.
    expect(stderr).toMatch(/check-some.*started \(trigger manual\)/);
    expect(stderr).toMatch(/check-some\/check started \(checkAccount\.bulk/);
    expect(stderr).toMatch(/check-some.*finished in/);
    expect(out.join('\n')).toMatch(/succeeded/);
    expect(out.join('\n')).toContain(m![1]);
    expect(`${out.join('\n')}\n${stderr}`).not.toContain(TOKEN);
  });

  it('msgflow apply hands the plan to the daemon, which sends exactly it; the plan itself is made here', async () => {
    const promo = `name: promo
steps:
  - id: send
    uses: messages.broadcast
    with:
      recipients: [79001112233, 79002223344, 79003334455]
      campaign: promo
      message: { text: "Spring prices are in" }
      follow: { deadline: 0 }
      report: reports/promo.csv
`;
    const { p, config, daemonRuns } = await daemonProject({ ui: true, flows: { 'promo.yaml': promo } });
    const planFile = path.join(p.dir, 'plan.json');
    const planned = memoryIo();
    expect(await runCli(['run', 'promo', '-c', config, '--plan', planFile], planned.io), planned.err.join('\n')).toBe(0);
    expect(planned.out.join('\n')).toMatch(/plan: 3 recipients planned/);
    expect(daemonRuns).toEqual([]);
    const { io, out, err } = memoryIo();
    const code = await runCli(['apply', planFile, '-c', config], io);
    expect(code, err.join('\n')).toBe(0);
    const m = /run (\S+) of promo executes in the daemon/.exec(err.join('\n'));
    expect(m, err.join('\n')).not.toBeNull();
    expect(daemonRuns).toEqual([m![1]]);
    expect(out.join('\n')).toMatch(/against the plan: 3 of 3 as planned, 0 not sent/);
    expect((await p.runtime.engine.getRun(m![1]))?.plan).toEqual({ mode: 'apply', path: planFile });
  });

  it('exits 1 when the run fails in the daemon, and prints --json from the store', async () => {
    const { config, daemonRuns } = await daemonProject({ ui: true });
    const { io, out } = memoryIo();
    expect(await runCli(['run', 'fail-some', '-c', config, '--json'], io)).toBe(1);
    const answer = JSON.parse(out.join('\n'));
    expect(answer.run.id).toBe(daemonRuns[0]);
    expect(answer.run.status).toBe('failed');
    expect(answer.steps[0].failed).toBe(1);
  });

  it('the daemon stopping while its run is followed: the run ends interrupted, as the store says, and the command exits 1', async () => {
    const { p, config, daemonRuns } = await daemonProject({ ui: true, paced: true });
    const { io, out, err } = memoryIo();
    const exit = runCli(['run', 'slow-check', '-c', config], io);
    const runId = await waitFor('the run to start in the daemon', () => daemonRuns[0]);
    await waitFor('an item of the run', async () => ((await p.runtime.engine.getRun(runId))?.itemsDone ?? 0) > 0);
    // As msgflow start stops: its dashboard first (the followed stream ends), then its runs, checkpointed.
    await p.server.close();
    await p.runtime.engine.shutdown('msgflow start stopping');
    expect(await exit, err.join('\n')).toBe(1);
    expect(out.join('\n')).toContain(`run ${runId} slow-check: interrupted`);
  });

  it('a bad input refused by the daemon is a bad -i: exit 2 naming the input', async () => {
    const { config, daemonRuns } = await daemonProject({ ui: true });
    const { io, err } = memoryIo();
    writeFileSync(
      path.join(path.dirname(config), 'flows', 'typed.yaml'),
      'name: typed\ninputs:\n  count: { type: number }\nsteps:\n  - id: say\n    uses: log\n    with: { message: "${{ inputs.count }}" }\n',
    );
    expect(await runCli(['run', 'typed', '-c', config, '-i', 'count=many'], io)).toBe(2);
    expect(err.join('\n')).toMatch(/inputs\.count: .*many.*\[INPUT_ARG_INVALID\]/);
    expect(daemonRuns).toEqual([]);
  });

  it('a wrong ui.token is refused with the daemon’s code, and the token is not printed', async () => {
    const { config, daemonRuns } = await daemonProject({ ui: true, serverToken: 'another-token-entirely' });
    const { io, err } = memoryIo();
    expect(await runCli(['run', 'check-some', '-c', config], io)).toBe(1);
    expect(err.join('\n')).toMatch(
      /dashboard at http:\/\/127\.0\.0\.1:\d+ refused the run: .*Authorization: Bearer <ui\.token>; this config's ui\.token is not the daemon's \(--no-daemon runs the flow here\) \(UI_UNAUTHORIZED\) \[DAEMON_API_REFUSED\]/,
    );
    expect(err.join('\n')).not.toContain(TOKEN);
    expect(daemonRuns).toEqual([]);
  });

  it('a daemon without a dashboard (--no-ui) leaves the run here, and says so', async () => {
    const { config, daemonRuns } = await daemonProject({ ui: false });
    const { io, out, err } = memoryIo();
    expect(await runCli(['run', 'check-some', '-c', config], io)).toBe(0);
    expect(err.join('\n')).toMatch(
      /the daemon \(msgflow start, pid \d+.*\) serves no dashboard \(started with --no-ui\): the run executes here/,
    );
    expect(out.join('\n')).toMatch(/succeeded/);
    expect(daemonRuns).toEqual([]);
  });

  it('--no-daemon runs here even when the daemon serves a dashboard', async () => {
    const { config, daemonRuns } = await daemonProject({ ui: true });
    const { io, err } = memoryIo();
    expect(await runCli(['run', 'check-some', '-c', config, '--no-daemon'], io)).toBe(0);
    expect(err.join('\n')).not.toMatch(/executes in the daemon/);
    expect(daemonRuns).toEqual([]);
  });
});
