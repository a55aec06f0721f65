/**
 * The daemon as a library: a program starts it with createDaemon (no CLI),
 * runs flows through its EngineClient, reloads a changed flow, reads its
 * status and stops it; the store's one-daemon lease goes with it.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MsgflowError } from '../../src/api/errors.js';
import { createDaemon, type Daemon, type DaemonEvent } from '../../src/index.js';
import { writeProject } from '../ui/helpers.js';
import { waitFor } from '../support/wait.js';

const greet = (message: string, on = '') => `name: greet
${on}steps:
  - id: say
    uses: log
    with: { message: "${message}" }
`;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A project of its own (the dashboard on a free port) and a daemon over it, stopped after the test. */
function daemonOver(dir: string, events: DaemonEvent[] = [], watch = false): Daemon {
  const daemon = createDaemon({ config: path.join(dir, 'config.yaml'), listen: false, watch, onEvent: (e) => events.push(e) });
  cleanups.push(() => daemon.stop());
  return daemon;
}

function projectDir(): string {
  const dir = writeProject('ui:\n  port: 0\n', { flows: { 'greet.yaml': greet('hello v1') } });
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('createDaemon', () => {
  it('starts in-process, runs a flow through its client, reloads a changed flow, tells its status, and stops cleanly', async () => {
    const dir = projectDir();
    const events: DaemonEvent[] = [];
    const daemon = daemonOver(dir, events);
    const logged: string[] = [];
    daemon.bus.on('log', (e) => logged.push(e.message));
    expect(daemon.status().state).toBe('new');

    const started = await daemon.start();
    expect(started).toMatchObject({ state: 'running', pid: process.pid, flows: { loaded: 6, scheduled: 1, notificationTriggered: 0 } });
    expect(started.dashboard).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(started.schedules.map((s) => s.flow)).toEqual(['check-some']);
    expect(events.map((e) => e.type)).toEqual(['dashboard', 'scheduled', 'notifications', 'started']);
    expect((await fetch(`${started.dashboard}/api/flows`)).status).toBe(200);

    const first = await daemon.client.start('greet');
    expect((await first.done).status).toBe('succeeded');
    expect(logged).toContain('hello v1');

    writeFileSync(path.join(dir, 'flows', 'greet.yaml'), greet('hello v2', 'on:\n  schedule: { cron: "0 3 * * *", timezone: UTC }\n'));
    const summary = await daemon.reload();
    expect(summary.changed).toEqual([{ flow: 'greet', what: 'schedule none → 0 3 * * * UTC, steps' }]);
    expect(events.at(-1)).toEqual({ type: 'reloaded', summary });
    const now = daemon.status();
    expect(now.lastReload?.summary).toEqual(summary);
    expect(now.schedules.map((s) => s.flow).sort()).toEqual(['check-some', 'greet']);

    const second = await daemon.client.start('greet');
    expect((await second.done).status).toBe('succeeded');
    expect(logged).toContain('hello v2');
    expect(daemon.status().activeRuns).toEqual([]);

    await daemon.stop();
    expect(daemon.status().state).toBe('stopped');
    await expect(fetch(`${started.dashboard}/api/flows`)).rejects.toThrow();
    // Stopping again changes nothing.
    await daemon.stop();
  });

  it('one daemon per store: a second refuses with DAEMON_RUNNING naming the first, and starts once the first stopped', async () => {
    const dir = projectDir();
    const first = daemonOver(dir);
    await first.start();
    const second = daemonOver(dir);
    const refused = await second.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(MsgflowError);
    expect((refused as MsgflowError).code).toBe('DAEMON_RUNNING');
    expect((refused as MsgflowError).message).toContain(`pid ${process.pid} on host `);
    expect(second.status().state).toBe('stopped');

    await first.stop();
    const third = daemonOver(dir);
    expect((await third.start()).state).toBe('running');
  });

  it('with watch, a changed flow file reloads it by itself', async () => {
    const dir = projectDir();
    const events: DaemonEvent[] = [];
    const daemon = daemonOver(dir, events, true);
    await daemon.start();
    expect(daemon.status().watching).toBe(true);
    expect(events.find((e) => e.type === 'watching')).toEqual({
      type: 'watching',
      configFile: path.join(dir, 'config.yaml'),
      flowsDir: path.join(dir, 'flows'),
    });
    writeFileSync(path.join(dir, 'flows', 'greet.yaml'), greet('hello v3'));
    const reloaded = await waitFor('the reload', () => events.find((e) => e.type === 'reloaded'));
    expect(reloaded).toMatchObject({ summary: { changed: [{ flow: 'greet', what: 'steps' }] } });
  });

  it('its client and runtime exist once it started; a daemon that never started stops at once', async () => {
    const daemon = daemonOver(projectDir());
    expect(() => daemon.client).toThrow(/await daemon\.start\(\) first/);
    await expect(daemon.reload()).rejects.toThrow(/only a running daemon reloads/);
    await daemon.stop();
    expect(daemon.status().state).toBe('stopped');
  });
});
