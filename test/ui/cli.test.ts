/**
 * `msgflow ui` through the CLI in-process, config.yaml's `ui:` key, and a
 * dashboard that only reads the store while another runtime (standing in for
 * the daemon or a `msgflow run` in a terminal) executes the runs.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig, loadConfig } from '../../src/config/load.js';
import { ui } from '../../src/cli/commands/ui.js';
import { runCli } from '../../src/cli/main.js';
import type { Io } from '../../src/cli/output.js';
import { createBus } from '../../src/engine/events.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { createUiServer } from '../../src/ui/server.js';
import { get, readEvents, writeProject } from './helpers.js';
import { waitFor } from '../support/wait.js';

function memoryIo() {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (t) => out.push(t), err: (t) => err.push(t), stdout: new PassThrough(), stderr: new PassThrough() };
  return { io, out, err };
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('config ui:', () => {
  it('defaults to 127.0.0.1:7071 without a token, and reads the token from the environment', () => {
    expect(parseConfig('instances: {}\n', 'config.yaml').ui).toEqual({ port: 7071, host: '127.0.0.1', token: '' });
    const text = 'ui:\n  port: 0\n  host: 127.0.0.1\n  token: ${MSGFLOW_UI_TOKEN:-}\n';
    expect(parseConfig(text, 'config.yaml', { env: {} }).ui.token).toBe('');
    expect(parseConfig(text, 'config.yaml', { env: { MSGFLOW_UI_TOKEN: 's3cret' } }).ui.token).toBe('s3cret');
    expect(() => parseConfig('ui: { prot: 1 }\n', 'config.yaml')).toThrow(/ui/);
  });
});

describe('msgflow ui', () => {
  it('prints its help', async () => {
    const { io, out } = memoryIo();
    expect(await runCli(['help', 'ui'], io)).toBe(0);
    expect(out.join('\n')).toMatch(/Usage: msgflow ui \[options\]/);
    expect(out.join('\n')).toMatch(/-p, --port N .*ui.port, 7071/);
    expect(out.join('\n')).toMatch(/--host H .*ui.host, 127.0.0.1/);
  });

  it('refuses a non-loopback host without a token, with a message saying what to set', async () => {
    const dir = writeProject();
    dirs.push(dir);
    const { io, err } = memoryIo();
    const code = await runCli(['ui', '--host', '0.0.0.0', '--port', '0', '-c', path.join(dir, 'config.yaml')], io);
    expect(code).toBe(1);
    expect(err.join('\n')).toMatch(/ui.host 0.0.0.0 is not a loopback address and ui.token is empty: set ui.token .* \[UI_UNSAFE_BIND\]/);
  });

  it('serves the dashboard over the store and shows, live, a run another process executes', async () => {
    const dir = writeProject();
    dirs.push(dir);
    const { io, out } = memoryIo();
    let stop!: () => void;
    const stopped = new Promise<void>((r) => (stop = r));
    const serving = ui(['--port', '0', '-c', path.join(dir, 'config.yaml')], io, stopped);
    const url = await waitFor('the dashboard address', () => /dashboard on (http:\/\/[\d.]+:\d+)/.exec(out.join('\n'))?.[1]);

    // The "daemon": another runtime over the same project and store.
    const runner = await createRuntime({ config: loadConfig(path.join(dir, 'config.yaml')), command: 'run', bus: createBus() });
    try {
      const flow = runner.flows().flows.find((f) => f.name === 'check-some')!;
      let runId = '';
      const events = readEvents(
        `${url}/api/events`,
        (e) => e.event === 'run' && e.data.id === runId && e.data.status === 'succeeded',
        30_000,
      );
      // The dashboard has read the history before the run exists: it must discover the run by itself.
      await get(`${url}/api/runs`);
      const handle = await runner.engine.start(flow, {});
      runId = handle.runId;
      await handle.done;
      const seen = await events;
      expect(seen.at(-1)!.data).toMatchObject({ id: runId, flow: 'check-some', status: 'succeeded' });
      const list = await get(`${url}/api/runs?flow=check-some`);
      expect(list.body.runs.map((r: any) => r.id)).toContain(runId);
      // msgflow ui leaves the local service to its owner: /healthz does not open it.
      const health = await get(`${url}/healthz`);
      expect(health.body.instances.default).toMatchObject({ kind: 'local', reachable: null });
    } finally {
      await runner.close();
      stop();
    }
    expect(await serving).toBe(0);
  });

  it('a second server on a busy port says which port and what to do', async () => {
    const dir = writeProject();
    dirs.push(dir);
    const runtime = await createRuntime({ config: loadConfig(path.join(dir, 'config.yaml')), command: 'ui' });
    const first = await createUiServer({ runtime, port: 0 });
    try {
      const { io, err } = memoryIo();
      const code = await runCli(['ui', '--port', String(first.port), '-c', path.join(dir, 'config.yaml')], io);
      expect(code).toBe(1);
      expect(err.join('\n')).toMatch(new RegExp(`port ${first.port} is already in use.*set ui.port in config.yaml \\(or --port\\)`));
    } finally {
      await first.close();
      await runtime.close();
    }
  });
});
