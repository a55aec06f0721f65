/**
 * Reloading a running daemon's flows (`msgflow start --watch`, SIGHUP), in
 * process: the scheduler taking flows added/replaced/removed after start(),
 * and the Reloader reading real YAML files, on a ManualClock.
 */
import { mkdtempSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { loadFlows } from '../../src/engine/flow/load.js';
import type { Flow } from '../../src/engine/flow/types.js';
import { createCronScheduler } from '../../src/engine/schedule/cron-scheduler.js';
import type { FireInfo } from '../../src/engine/schedule/types.js';
import { buildRegistry } from '../../src/runtime/registry.js';
import { formatReload, Reloader, watchProject } from '../../src/runtime/reload.js';
import { ManualClock } from '../../src/util/clock.js';
import { waitFor } from '../support/wait.js';
import { controlledRuns, createBus, makeFlow, memoryState } from './helpers.js';

const START = Date.parse('2026-03-02T10:00:30Z');
const iso = (t: number) => new Date(t).toISOString();

describe('scheduler: flows added, replaced and removed after start()', () => {
  it('an added flow fires from now on (no catch-up, no startup run); a replaced cron fires at its new slots only', async () => {
    const clock = new ManualClock(START);
    const fired: Array<FireInfo & { flow: string }> = [];
    const fire = (flow: string) => async (info: FireInfo) => void fired.push({ ...info, flow });
    const scheduler = createCronScheduler({
      bus: createBus(),
      state: memoryState({ 'flow:late': { lastFire: START - 86_400_000, pending: [] } }),
      clock,
    });
    await scheduler.start();
    scheduler.add(makeFlow('late', { schedule: { cron: '0 * * * *', timezone: 'UTC' }, missed: 'all', startup: true }), fire('late'));
    await scheduler.idle();
    expect(fired).toEqual([]);
    await clock.advance(60 * 60_000); // 11:00:30
    await waitFor('fired.length === 1', () => fired.length === 1);
    expect(fired.map((f) => [f.flow, iso(f.scheduledAt), f.trigger])).toEqual([['late', '2026-03-02T11:00:00.000Z', 'schedule']]);

    scheduler.replace(makeFlow('late', { schedule: { cron: '30 * * * *', timezone: 'UTC' } }), fire('late v2'));
    await scheduler.idle();
    await clock.advance(60 * 60_000); // 12:00:30: 11:30 is a new slot, 12:00 an old one
    await waitFor('fired.length === 2', () => fired.length === 2);
    await new Promise((r) => setImmediate(r));
    expect(fired.slice(1).map((f) => [f.flow, iso(f.scheduledAt)])).toEqual([['late v2', '2026-03-02T11:30:00.000Z']]);
    await scheduler.stop();
  });

  it('a removed flow stops firing, its waiting fires go, and its active run goes on (idle() waits for it)', async () => {
    const clock = new ManualClock(START);
    const runs = controlledRuns();
    const state = memoryState();
    const scheduler = createCronScheduler({ bus: createBus(), state, clock });
    scheduler.add(makeFlow('busy', { schedule: { cron: '* * * * *', timezone: 'UTC' }, overlap: 'queue' }), runs.fire);
    await scheduler.start();
    await clock.advance(60_000);
    await waitFor('runs.runs.length === 1', () => runs.runs.length === 1);
    await clock.advance(60_000);
    await waitFor('scheduler.status()[0]?.pending === 1', () => scheduler.status()[0]?.pending === 1);
    await scheduler.remove('busy');
    expect(scheduler.status()).toEqual([]);
    expect(state.data.has('flow:busy')).toBe(false);
    let idle = false;
    const idled = scheduler.idle().then(() => (idle = true));
    await clock.advance(5 * 60_000);
    await new Promise((r) => setImmediate(r));
    expect(runs.runs.length).toBe(1);
    expect(runs.runs[0]!.ended).toBe(false);
    expect(idle).toBe(false);
    runs.runs[0]!.end();
    await idled;
    await scheduler.stop();
  });
});

const CONFIG = `instances:
  default:
    apiUrl: http://127.0.0.1:9
    idInstance: "1101000001"
    apiTokenInstance: reload-test-token-77
flowsDir: flows
`;

const flowYaml = (name: string, cron: string) => `name: ${name}
on:
  schedule: { cron: "${cron}", timezone: UTC }
steps:
  - id: say
    uses: log
    with: { message: "hello from ${name}" }
`;

describe('Reloader: config.yaml and flows/ from disk', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function daemon() {
    dir = mkdtempSync(path.join(tmpdir(), 'msgflow-reload-'));
    mkdirSync(path.join(dir, 'flows'));
    const write = (name: string, text: string) => writeFileSync(path.join(dir!, name), text);
    write('config.yaml', CONFIG);
    write('flows/check-leads.yaml', flowYaml('check-leads', '0 9 * * *'));
    write('flows/nightly.yaml', flowYaml('nightly', '0 2 * * *'));
    const configPath = path.join(dir, 'config.yaml');
    const config = loadConfig(configPath);
    const registry = await buildRegistry(config);
    const { flows } = loadFlows(path.join(dir, 'flows'), { registry, baseDir: dir, instances: ['default'] });
    const clock = new ManualClock(Date.parse('2026-03-02T08:00:00Z'));
    const fired: string[] = [];
    const fireFor = (flow: Flow) => async (info: FireInfo) =>
      void fired.push(`${flow.name} ${iso(info.scheduledAt)} ${JSON.stringify(flow.steps[0]!.with)}`);
    const scheduler = createCronScheduler({ bus: createBus(), state: memoryState(), clock });
    for (const f of flows) scheduler.add(f, fireFor(f));
    await scheduler.start();
    const reloader = new Reloader({ runtime: { config, registry }, scheduler, configPath, flows, fireFor });
    return { write, clock, fired, scheduler, reloader, rm: (name: string) => rmSync(path.join(dir!, name)) };
  }

  it('changed, added and removed schedules take effect, and the reload says what changed', async () => {
    const d = await daemon();
    d.write('flows/check-leads.yaml', flowYaml('check-leads', '0 10 * * *'));
    d.write('flows/hourly.yaml', flowYaml('hourly', '30 * * * *'));
    d.rm('flows/nightly.yaml');
    const summary = await d.reloader.reload();
    expect(formatReload(summary)).toEqual({
      errors: [],
      line: 'reloaded: 1 flow changed (check-leads: schedule 0 9 * * * UTC → 0 10 * * * UTC), 1 added (hourly), 1 removed (nightly)',
    });
    await d.scheduler.idle();
    expect(d.scheduler.status().map((s) => [s.flow, s.cron])).toEqual([
      ['check-leads', '0 10 * * *'],
      ['hourly', '30 * * * *'],
    ]);
    await d.clock.advance(24 * 3_600_000);
    await waitFor('d.fired.length === 25', () => d.fired.length === 25);
    expect(d.fired.filter((f) => f.startsWith('check-leads'))).toEqual([
      'check-leads 2026-03-02T10:00:00.000Z {"message":"hello from check-leads"}',
    ]);
    expect(d.fired.some((f) => f.startsWith('nightly'))).toBe(false);
    expect(formatReload(await d.reloader.reload()).line).toBe('reloaded: 0 flows changed, 0 added, 0 removed');
    await d.scheduler.stop();
  });

  it('a flow that now fails validation is reported with file:line:col and keeps its last good version', async () => {
    const d = await daemon();
    d.write('flows/check-leads.yaml', flowYaml('check-leads', '0 10 * * *').replace('uses: log', 'uses: no.such.action'));
    const { errors, line } = formatReload(await d.reloader.reload());
    expect(line).toBe('reloaded: 0 flows changed, 0 added, 0 removed, 1 invalid');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^reload: .*flows[/\\]check-leads\.yaml:6:11 steps\[0\]\.uses: .*no\.such\.action/);
    expect(errors[0]).toContain("reload: flow 'check-leads' keeps its last good version");
    expect(d.scheduler.status().map((s) => [s.flow, s.cron])).toEqual([
      ['check-leads', '0 9 * * *'],
      ['nightly', '0 2 * * *'],
    ]);
    await d.clock.advance(3_600_000); // 09:00
    await waitFor('d.fired.length === 1', () => d.fired.length === 1);
    expect(d.fired[0]).toBe('check-leads 2026-03-02T09:00:00.000Z {"message":"hello from check-leads"}');
    await d.scheduler.stop();
  });

  it('a config.yaml that fails validation is reported and the running config stays; a valid change of a live section is named', async () => {
    const d = await daemon();
    d.write('config.yaml', CONFIG.replace('flowsDir: flows', 'flowsDir: 42\nlogLevel: loud'));
    const bad = formatReload(await d.reloader.reload());
    expect(bad.errors[0]).toMatch(/^reload: config\.yaml not taken, the running config stays:\n.*config\.yaml:\d+:\d+/);
    expect(bad.line).toBe('reloaded: 0 flows changed, 0 added, 0 removed');
    d.write('config.yaml', CONFIG.replace('apiTokenInstance: reload-test-token-77', 'apiTokenInstance: reload-test-token-78'));
    const changed = formatReload(await d.reloader.reload());
    expect(changed.errors).toEqual(['reload: config.yaml instances changed: restart msgflow start to apply']);
    expect(changed.errors.join('\n')).not.toContain('reload-test-token');
    await d.scheduler.stop();
  });
});

describe('watchProject (msgflow start --watch)', () => {
  it('each burst of saves (an editor writing a new file and renaming it over the old one) gives one reload, again and again; other files none', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-watch-'));
    try {
      mkdirSync(path.join(dir, 'flows'));
      writeFileSync(path.join(dir, 'config.yaml'), CONFIG);
      writeFileSync(path.join(dir, 'flows', 'a.yaml'), flowYaml('a', '0 9 * * *'));
      let calls = 0;
      let signal!: () => void;
      let called = new Promise<void>((r) => (signal = r));
      const w = watchProject(
        path.join(dir, 'config.yaml'),
        path.join(dir, 'flows'),
        () => {
          calls++;
          signal();
        },
        200,
      );
      const saveOver = (file: string, text: string) => {
        writeFileSync(`${file}.tmp~`, text);
        renameSync(`${file}.tmp~`, file);
      };
      try {
        writeFileSync(path.join(dir, 'notes.txt'), 'not watched');
        writeFileSync(path.join(dir, 'flows', 'a.test.yaml'), 'cases: []\n');
        saveOver(path.join(dir, 'config.yaml'), CONFIG);
        saveOver(path.join(dir, 'flows', 'a.yaml'), flowYaml('a', '0 10 * * *'));
        await called;
        expect(calls).toBe(1);
        // The replaced file is still watched (a watch on the file itself would have lost it).
        for (let i = 2; i <= 3; i++) {
          called = new Promise<void>((r) => (signal = r));
          saveOver(path.join(dir, 'flows', 'a.yaml'), flowYaml('a', `0 ${10 + i} * * *`));
          await called;
          expect(calls).toBe(i);
        }
      } finally {
        w.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
