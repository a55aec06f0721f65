/**
 * Flows triggered by a campaign's pause: `on: { alert: { kinds:
 * [campaign-paused, campaign-resumed] } }`. A campaign run by `msgflow run`
 * (no daemon) pauses on a pool's number that turns yellowCard; `msgflow start`
 * started afterwards finds the pause in the store and starts the flow once,
 * with the pause as `event`; restarted, it starts nothing again; the lift
 * (`msgflow pauses lift`) is campaign-resumed, started once, and resolves
 * the alert.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDaemon } from '../../src/index.js';
import { listAlerts } from '../../src/engine/alerts/records.js';
import type { RunRecord } from '../../src/store/types.js';
import { cli } from '../support/cli.js';
import { networkYaml } from '../support/network.js';
import { waitFor } from '../support/wait.js';

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const CONFIG = `instances:
  default: { apiUrl: local }
  second: { apiUrl: local, idInstance: "1101000002" }
local:
  port: 0
  dataDir: .msgflow/local
${networkYaml('  ', { deliveredAfterMs: 100 })}
  instances:
    - { idInstance: "1101000001", apiTokenInstance: tok-campaign-a1, sendIntervalMs: 500 }
    - idInstance: "1101000002"
      apiTokenInstance: tok-campaign-b2
      sendIntervalMs: 500
      failures: { states: [{ state: yellowCard, afterSends: 1 }] }
ui: { port: 0 }
store: { driver: lowdb, dir: .msgflow/state }
`;

const CAMPAIGN = `name: campaign
steps:
  - id: send
    uses: messages.broadcast
    with:
      recipients: [79001112233, 79002223344, 79003334455, 79004445566]
      campaign: autumn
      message: { text: "Autumn prices are in" }
      pool: { instances: [default, second], pace: { delay: 1s, jitter: 0 } }
      guard: { checkEvery: 0s, pauseFor: 1h }
      follow: { deadline: 0 }
      reconcile: { sendInterval: 500ms, grace: 1s, clockSkew: 2s }
      report: reports/autumn.csv
`;

const WATCH = `name: watch
on:
  alert: { kinds: [campaign-paused, campaign-resumed] }
steps:
  - id: say
    uses: log
    with: { message: "\${{ event.kind }} \${{ event.campaign }} on \${{ event.instance }}: \${{ event.reason }}" }
`;

function project(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-campaign-alerts-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, 'flows'));
  writeFileSync(path.join(dir, 'config.yaml'), CONFIG);
  writeFileSync(path.join(dir, 'flows', 'campaign.yaml'), CAMPAIGN);
  writeFileSync(path.join(dir, 'flows', 'watch.yaml'), WATCH);
  return dir;
}

async function daemonOn(dir: string) {
  const daemon = createDaemon({ config: path.join(dir, 'config.yaml'), ui: false });
  cleanups.push(() => daemon.stop());
  await daemon.start();
  return daemon;
}

describe('a flow triggered by a campaign pause', () => {
  it('starts once per pause, found by msgflow start after the run that paused, not again after a restart; the lift starts it once more and resolves the alert', async () => {
    const dir = project();
    const run = await cli(['run', 'campaign'], dir);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stderr).toContain("campaign:autumn paused on instance 'second': state yellowCard");

    const first = await daemonOn(dir);
    const watchRuns = async (): Promise<RunRecord[]> => (await first.runtime.store.listRuns()).filter((r) => r.flow === 'watch');
    await waitFor('the watch flow to run', async () => (await watchRuns()).some((r) => r.status === 'succeeded'));
    const [paused] = await watchRuns();
    expect(paused).toMatchObject({ trigger: 'alert', status: 'succeeded' });
    expect(paused!.event).toMatchObject({
      kind: 'campaign-paused',
      campaign: 'autumn',
      scope: 'campaign:autumn',
      instance: 'second',
      reason: 'state yellowCard',
      flow: 'campaign',
      step: 'send',
    });
    expect(typeof paused!.event!.until).toBe('number');
    const alerts = await listAlerts(first.runtime.store);
    expect(alerts).toMatchObject([{ kind: 'campaign-paused', subject: 'second:campaign:autumn', state: 'raised', occurrences: 1 }]);
    await first.stop();

    // Restarted: the pause is still in force and known; nothing starts again, even as the lift writes its occurrence once more.
    const second = await daemonOn(dir);
    const lifted = await cli(['pauses', 'lift', 'second'], dir);
    expect(lifted.code, lifted.stdout + lifted.stderr).toBe(0);
    const runs = async () => (await second.runtime.store.listRuns()).filter((r) => r.flow === 'watch');
    await waitFor(
      'the resumed run',
      async () => (await runs()).some((r) => r.event?.kind === 'campaign-resumed' && r.status === 'succeeded'),
      {
        timeoutMs: 90_000,
      },
    );
    await waitFor('the alert to resolve', async () => (await listAlerts(second.runtime.store))[0]?.state === 'resolved');
    const all = await runs();
    expect(all.map((r) => r.event?.kind).sort()).toEqual(['campaign-paused', 'campaign-resumed']);
    expect(all.find((r) => r.event?.kind === 'campaign-resumed')!.event).toMatchObject({
      how: 'lifted',
      campaign: 'autumn',
      instance: 'second',
    });
  });
});
