/**
 * Failures and alerts reach the operator: a failed run of one flow starts
 * the flows with `on.failure` naming it (the failed run, step, error code and
 * counts as `event`) and those with `on.alert`, through the daemon; the
 * alert is listed raised, and resolved once the flow succeeds again; an
 * occurrence left by a crash anywhere between its record and its runs starts
 * each flow exactly once; a run going past its `sla` raises sla-missed; an
 * instance-wide pause raises instance-paused, resolved when it ends.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDaemon } from '../../src/index.js';
import { AlertDispatcher } from '../../src/engine/alerts/dispatcher.js';
import { startAlertMonitor } from '../../src/engine/alerts/monitor.js';
import {
  ALERT_INTENTS_NS,
  ALERT_RUNS_NS,
  alertRunId,
  listAlerts,
  recordAlertIntent,
  type AlertIntent,
} from '../../src/engine/alerts/records.js';
import { loadFlowFile } from '../../src/engine/flow/load.js';
import { busLogger } from '../../src/engine/run/engine.js';
import { buildRegistry } from '../../src/runtime/registry.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { cli } from '../support/cli.js';
import { remoteConfig } from '../support/project.js';
import { waitFor } from '../support/wait.js';
import { flow, step, testEngine } from '../engine-run/helpers.js';
import { localConfig, startLocal, T0 } from '../support/local-service.js';

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** /data answers `status.data`; /alert records what the failure flow posts. */
async function crm(status: { data: number }): Promise<{ url: string; alerts: Record<string, unknown>[] }> {
  const alerts: Record<string, unknown>[] = [];
  const s: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      if (req.url === '/alert') alerts.push(JSON.parse(body) as Record<string, unknown>);
      res.writeHead(req.url === '/data' ? status.data : 200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    s.closeAllConnections();
    return new Promise((r) => s.close(r));
  });
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, alerts };
}

const FLOWS = (url: string): Record<string, string> => ({
  'nightly.yaml': `name: nightly
steps:
  - id: fetch
    uses: http.request
    with: { url: "${url}/data", allowPrivate: true, retry: { attempts: 1 } }
`,
  'tell-operator.yaml': `name: tell-operator
on:
  failure: { flows: [nightly] }
steps:
  - id: post
    uses: http.request
    with:
      method: POST
      url: ${url}/alert
      allowPrivate: true
      json:
        flow: \${{ event.flow }}
        runId: \${{ event.runId }}
        step: \${{ event.step }}
        code: \${{ event.code }}
        failed: \${{ event.counts.failed }}
`,
  'alert-log.yaml': `name: alert-log
on:
  alert: { kinds: [run-failed, sla-missed] }
steps:
  - id: say
    uses: log
    with: { message: "ALERT \${{ event.kind }} \${{ event.subject }}" }
`,
});

function projectWith(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-alerts-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, 'flows'));
  writeFileSync(
    path.join(dir, 'config.yaml'),
    remoteConfig('tok-alerts-1', 'ui:\n  port: 0\nstore:\n  driver: lowdb\n  dir: .msgflow/state\n'),
  );
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, 'flows', name), text);
  return dir;
}

describe('failure flows and alerts in the daemon', () => {
  it('a failed run starts its failure flow and the alert flows once, is listed raised, and resolves when the flow succeeds', async () => {
    const status = { data: 503 };
    const srv = await crm(status);
    const dir = projectWith(FLOWS(srv.url));
    const daemon = createDaemon({ config: path.join(dir, 'config.yaml'), listen: false });
    cleanups.push(() => daemon.stop());
    const logged: string[] = [];
    daemon.bus.on('log', (e) => logged.push(e.message));
    await daemon.start();

    const failed = await (await daemon.client.start('nightly')).done;
    expect(failed.status).toBe('failed');
    await waitFor('the failure flow to post', () => srv.alerts.length === 1);
    expect(srv.alerts[0]).toEqual({ flow: 'nightly', runId: failed.id, step: 'fetch', code: 'HTTP_STATUS', failed: 1 });
    await waitFor('the alert flow to log', () => logged.includes('ALERT run-failed nightly'));

    const listed = await cli(['alerts'], dir);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/raised\s+run-failed\s+nightly/);
    expect(listed.stdout).toContain(`run ${failed.id} of nightly failed`);
    const api = (await (await fetch(`${daemon.status().dashboard}/api/alerts`)).json()) as { alerts: { kind: string; state: string }[] };
    expect(api.alerts).toMatchObject([{ kind: 'run-failed', state: 'raised' }]);

    status.data = 200;
    expect((await (await daemon.client.start('nightly')).done).status).toBe('succeeded');
    await waitFor('the alert to resolve', async () => (await listAlerts(daemon.runtime.store))[0]?.state === 'resolved');
    expect((await cli(['alerts'], dir)).stdout).toMatch(/resolved\s+run-failed\s+nightly/);
    // Each failure started each flow once; the alert flows' own runs raised nothing.
    expect(srv.alerts).toHaveLength(1);
    expect(logged.filter((l) => l === 'ALERT run-failed nightly')).toHaveLength(1);
  });
});

describe('alert occurrences', () => {
  /** The project's flows loaded from YAML, and a real engine over a memory store. */
  async function setup() {
    const dir = projectWith(FLOWS('http://127.0.0.1:9'));
    const registry = await buildRegistry({ plugins: [], baseDir: dir });
    const flows = ['nightly', 'tell-operator', 'alert-log'].map((n) =>
      loadFlowFile(path.join(dir, 'flows', `${n}.yaml`), { registry, baseDir: dir }),
    );
    const t = testEngine(registry, { store: createMemoryStore() });
    const dispatcher = () =>
      new AlertDispatcher({
        engine: t.engine,
        store: t.store,
        bus: t.bus,
        clock: new ManualClock(0),
        logger: busLogger(t.bus),
        flows: () => flows,
      });
    return { ...t, flows, dispatcher };
  }

  const failure = (runId: string): AlertIntent => ({
    key: `run-failed:${runId}`,
    kind: 'run-failed',
    subject: 'nightly',
    message: 'failed',
    at: 0,
    flow: 'nightly',
    runId,
    step: 'fetch',
    code: 'HTTP_STATUS',
    counts: { done: 0, failed: 1 },
    trigger: 'manual',
  });

  it('starts each flow once however often a crash leaves the occurrence, and waits while the failed run is still resumable', async () => {
    const t = await setup();
    const now = Date.now();
    const run = {
      id: 'nightly-r1',
      flow: 'nightly',
      status: 'running' as const,
      trigger: 'manual' as const,
      dryRun: false,
      startedAt: now,
      updatedAt: now,
      itemsDone: 0,
      itemsFailed: 1,
      resumes: 0,
    };
    await t.store.createRun(run);
    await recordAlertIntent(t.store, failure(run.id));
    // The engine writes the occurrence before the run's record says failed: nothing is decided yet.
    await t.dispatcher().drain();
    expect(await t.store.getRun(alertRunId('tell-operator', 'run-failed:nightly-r1'))).toBeUndefined();
    expect(await t.store.kv(ALERT_INTENTS_NS).get('run-failed:nightly-r1')).toBeDefined();

    await t.store.updateRun(run.id, { status: 'failed' });
    await t.dispatcher().drain();
    const started = () => t.events.filter(([n, e]) => n === 'run:started' && e.trigger === 'alert').map(([, e]) => e.flow as string);
    await waitFor('both flows to start', () => started().length === 2);
    expect(started().sort()).toEqual(['alert-log', 'tell-operator']);
    expect(await t.store.kv(ALERT_INTENTS_NS).get('run-failed:nightly-r1')).toBeUndefined();

    // A crash before the intent was deleted leaves it: a new process's dispatcher starts nothing again.
    await recordAlertIntent(t.store, failure(run.id));
    await t.dispatcher().drain();
    expect(started()).toHaveLength(2);
    expect((await listAlerts(t.store))[0]).toMatchObject({ kind: 'run-failed', subject: 'nightly', state: 'raised', occurrences: 1 });
    // A run decided but not started (a crash between): started once by the next pass.
    await t.store.kv(ALERT_RUNS_NS).set('tell-operator-late', { flow: 'tell-operator', event: failure('x'), at: 0 });
    await t.dispatcher().drain();
    await t.dispatcher().drain();
    expect(started().filter((f) => f === 'tell-operator')).toHaveLength(2);
    expect(await t.store.kv(ALERT_RUNS_NS).entries()).toEqual([]);
  });

  it('a failed run an alert started starts no alert flow (a failing alert flow does not start itself)', async () => {
    const t = await setup();
    const now = Date.now();
    await t.store.createRun({
      id: 'tell-1',
      flow: 'tell-operator',
      status: 'failed',
      trigger: 'alert',
      dryRun: false,
      startedAt: now,
      updatedAt: now,
      itemsDone: 0,
      itemsFailed: 1,
      resumes: 0,
    });
    await recordAlertIntent(t.store, { ...failure('tell-1'), subject: 'tell-operator', flow: 'tell-operator', trigger: 'alert' });
    await t.dispatcher().drain();
    expect(t.events.filter(([n]) => n === 'run:started')).toEqual([]);
    expect((await listAlerts(t.store))[0]).toMatchObject({ subject: 'tell-operator', state: 'raised' });
  });
});

describe('alert kinds', () => {
  it('a step over its timeout in a flow over its SLA raises step-timeout, sla-missed and run-failed; alert flows get the kinds they name', async () => {
    const silent: Server = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    cleanups.push(() => {
      silent.closeAllConnections();
      return new Promise((r) => silent.close(r));
    });
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const dir = projectWith({
      ...FLOWS(url),
      'slow.yaml': `name: slow
sla: { maxDuration: 1s }
steps:
  - id: fetch
    uses: http.request
    timeout: 2s
    with: { url: "${url}/", allowPrivate: true, timeout: 1h, retry: { attempts: 1 } }
`,
    });
    const registry = await buildRegistry({ plugins: [], baseDir: dir });
    const flows = ['slow', 'alert-log'].map((n) => loadFlowFile(path.join(dir, 'flows', `${n}.yaml`), { registry, baseDir: dir }));
    const clock = new ManualClock(Date.parse('2026-01-05T09:00:00Z'));
    const t = testEngine(registry, { store: createMemoryStore(), clock });
    const { done } = await t.engine.start(flows[0]!);
    await waitFor('the step to wait', () => clock.pending > 0);
    await clock.advance(2000);
    expect((await done).status).toBe('failed');
    const d = new AlertDispatcher({ engine: t.engine, store: t.store, bus: t.bus, clock, logger: busLogger(t.bus), flows: () => flows });
    await d.drain();
    const alerts = await listAlerts(t.store);
    expect(alerts.map((a) => `${a.kind} ${a.subject} ${a.state}`).sort()).toEqual([
      'run-failed slow raised',
      'sla-missed slow raised',
      'step-timeout slow.fetch raised',
    ]);
    expect(alerts.find((a) => a.kind === 'step-timeout')).toMatchObject({ code: 'STEP_TIMEOUT', step: 'fetch' });
    // alert-log names run-failed and sla-missed, not step-timeout.
    const alertRuns = () => t.events.filter(([n, e]) => n === 'run:started' && e.trigger === 'alert').map(([, e]) => e.flow as string);
    await waitFor('the alert flow to run twice', () => alertRuns().length === 2);
    expect(alertRuns()).toEqual(['alert-log', 'alert-log']);
  });

  it('a notification consumer lagging past the threshold raises notification-lag, resolved when one arrives in time', async () => {
    const t = testEngine(await buildRegistry({ plugins: [], baseDir: tmpdir() }), { store: createMemoryStore() });
    const monitor = startAlertMonitor({
      ...t,
      clock: new ManualClock(0),
      logger: busLogger(t.bus),
      flows: () => [],
      notificationLagMs: 60_000,
    });
    cleanups.push(() => monitor.stop());
    t.bus.emit('notification:received', { instance: 'default', type: 'incomingMessageReceived', lagMs: 5 * 60_000, flowsStarted: 0 });
    await waitFor('the lag alert', async () => (await listAlerts(t.store))[0]?.state === 'raised');
    expect((await listAlerts(t.store))[0]).toMatchObject({ kind: 'notification-lag', subject: 'default', instance: 'default' });
    t.bus.emit('notification:received', { instance: 'default', type: 'incomingMessageReceived', lagMs: 2_000, flowsStarted: 0 });
    await waitFor('the lag alert to resolve', async () => (await listAlerts(t.store))[0]?.state === 'resolved');
  });

  it("checkAccount's rate_limit_exceeded from the local service raises instance-paused: the flow naming that kind runs once, and the alert resolves when the pause ends", async () => {
    const clock = new ManualClock(T0);
    const l = await startLocal({
      clock,
      config: localConfig({}, { checkAccountLimit: { numbers: 1, windowMinutes: 10, retryAfterSeconds: 60 } }),
    });
    cleanups.push(() => l.close());
    const dir = projectWith({
      'paused-log.yaml': `name: paused-log
on:
  alert: { kinds: [instance-paused] }
steps:
  - id: say
    uses: log
    with: { message: "PAUSED \${{ event.subject }} until \${{ event.until }}" }
`,
    });
    const registry = await buildRegistry({ plugins: [], baseDir: dir });
    const onAlert = loadFlowFile(path.join(dir, 'flows', 'paused-log.yaml'), { registry, baseDir: dir });
    const t = testEngine(registry, { clock, clientFor: () => l.client, identityFor: () => 'local-test', waitRecheckMs: 5 });
    const logged: string[] = [];
    t.bus.on('log', (e) => logged.push(e.message));
    const monitor = startAlertMonitor({ ...t, clock, logger: busLogger(t.bus), flows: () => [onAlert], checkEveryMs: 3_600_000 });
    cleanups.push(() => monitor.stop());
    const checking = flow(
      [step({ id: 'check', uses: 'checkAccount', forEach: '${{ inputs.numbers }}', with: { phoneNumber: '${{ item }}' } })],
      { inputs: { numbers: { value: [79001112233, 79002223344] } } },
    );

    const { runId, done } = await t.engine.start(checking);
    await waitFor('the run to wait on the pause', async () => (await t.engine.getRun(runId))?.status === 'waiting');
    const until = T0 + 2 * 3_600_000;
    await monitor.check();
    const raised = () => listAlerts(t.store).then((a) => a.filter((x) => x.kind === 'instance-paused'));
    expect(await raised()).toMatchObject([
      { kind: 'instance-paused', subject: 'default:checkAccount', state: 'raised', instance: 'default', until, occurrences: 1 },
    ]);
    await waitFor('the alert flow to log', () => logged.includes(`PAUSED default:checkAccount until ${until}`));
    // Another pass (or another process's) starts nothing again while the pause holds.
    await monitor.check();
    expect(t.events.filter(([n, e]) => n === 'run:started' && e.flow === 'paused-log')).toHaveLength(1);

    await clock.advance(2 * 3_600_000);
    expect(await done).toMatchObject({ status: 'succeeded', itemsDone: 2, itemsFailed: 0 });
    await monitor.check();
    expect(await raised()).toMatchObject([{ kind: 'instance-paused', subject: 'default:checkAccount', state: 'resolved' }]);
    expect(logged.filter((m) => m.startsWith('PAUSED'))).toHaveLength(1);
  });
});
