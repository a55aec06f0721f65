/**
 * `msgflow start` serves the dashboard (and `--no-ui` does not), as a real
 * child process. Runs once start.ts wires serveDashboard in (its help rows
 * then list --no-ui); until then it is skipped with a message saying so.
 */
import { rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS_HELP } from '../../src/cli/help.js';
import { runCli } from '../../src/cli/main.js';
import type { Io } from '../../src/cli/output.js';
import { spawnCli, type Proc } from '../support/spawn.js';
import { get, post, writeProject } from './helpers.js';
import { waitFor } from '../support/wait.js';

function memoryIo() {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (t) => out.push(t), err: (t) => err.push(t), stdout: new PassThrough(), stderr: new PassThrough() };
  return { io, out, err };
}

const wired = COMMANDS_HELP.start?.options.some((o) => o.name === 'no-ui') ?? false;
if (!wired)
  console.warn('test/ui/start.test.ts: skipped: msgflow start does not serve the dashboard yet (start.ts: serveDashboard, --no-ui)');

/** A `msgflow start` of its own project (and store), and what it holds. */
interface Daemon {
  dir: string;
  proc: Proc;
  blocker?: net.Server;
}

function startDaemon(extraConfig: string, args: string[] = []): Omit<Daemon, 'blocker'> {
  const dir = writeProject(extraConfig, { unpaced: true });
  return { dir, proc: spawnCli(['start', ...args, '-c', path.join(dir, 'config.yaml')], dir) };
}

describe.skipIf(!wired)('msgflow start and the dashboard', () => {
  // The three daemons start together, each over its own project and store: their start-ups
  // (a node process each) overlap instead of adding up. Each test still waits for its own.
  let withUi: Daemon;
  let busyPort: Daemon;
  let noUi: Daemon;
  beforeAll(async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    withUi = startDaemon('ui:\n  port: 0\n');
    busyPort = { ...startDaemon(`ui:\n  port: ${port}\n`), blocker };
    noUi = startDaemon('ui:\n  port: 0\n', ['--no-ui']);
  });
  afterAll(async () => {
    for (const d of [withUi, busyPort, noUi]) {
      if (!d) continue;
      d.proc.child.kill('SIGTERM');
      await d.proc.exited;
      d.blocker?.close();
      rmSync(d.dir, { recursive: true, force: true });
    }
  });

  it('tells the dashboard address, which lists the flows and runs one', async () => {
    const { dir, proc: d } = withUi;
    const ready = await d.waitForOutput(/dashboard on (http:\/\/[\d.]+:\d+)/);
    const url = ready[1]!;
    const flows = await get(`${url}/api/flows`);
    expect(flows.body.flows.map((f: any) => f.name)).toContain('check-some');
    const started = await post(`${url}/api/flows/check-some/runs`, {});
    expect(started.status).toBe(201);
    await waitFor(
      'the run to succeed',
      async () => (await get(`${url}/api/runs/${started.body.runId}`)).body.run.status === 'succeeded',
      30_000,
    );
    // msgflow run in a terminal beside it: the daemon executes the run (it recorded its dashboard in the store).
    const { io, out, err } = memoryIo();
    expect(await runCli(['run', 'check-some', '-c', path.join(dir, 'config.yaml')], io)).toBe(0);
    const m = /run (\S+) of check-some executes in the daemon/.exec(err.join('\n'));
    expect(m, err.join('\n')).not.toBeNull();
    expect(out.join('\n')).toContain(m![1]);
    const shown = await get(`${url}/api/runs/${m![1]}`);
    expect(shown.body.run.status).toBe('succeeded');
  });

  it('a busy dashboard port does not keep the flows from running: it says so and goes on', async () => {
    const { proc: d, blocker } = busyPort;
    const port = (blocker!.address() as net.AddressInfo).port;
    await d.waitForOutput(/started;/);
    expect(d.output()).toMatch(new RegExp(`port ${port} is already in use.*ui.port in config.yaml.*running without the dashboard`));
  });

  it('--no-ui serves no dashboard', async () => {
    const { dir, proc: d } = noUi;
    await d.waitForOutput(/started;/);
    expect(d.output()).not.toMatch(/dashboard on/);
    // msgflow run beside it executes here and says why.
    const { io, err } = memoryIo();
    expect(await runCli(['run', 'check-some', '-c', path.join(dir, 'config.yaml')], io)).toBe(0);
    expect(err.join('\n')).toMatch(
      /the daemon \(msgflow start, pid \d+.*\) serves no dashboard \(started with --no-ui\): the run executes here/,
    );
  });
});
