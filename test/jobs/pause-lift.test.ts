/**
 * The instance-wide checkAccount pause, as a user meets it: the repo's
 * check-leads flow hits rate_limit_exceeded on the in-process local service
 * and waits 2 hours on a ManualClock. What the log, the bar on an 80-column
 * terminal, `msgflow runs` and `msgflow pauses` say while it waits (each
 * reason once, each end once, within 80 columns); and a lift ends the wait at
 * once, whoever lifts it: `msgflow pauses lift` over its own store handle (as
 * another process or host would), on the lowdb and the redis driver, or the
 * dashboard's Lift in the daemon's own process.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createBus } from '../../src/engine/events.js';
import { createCliReporter } from '../../src/engine/progress/cli-reporter.js';
import { formatUntil } from '../../src/engine/progress/format.js';
import { createProgressReporter, type ProgressReporter } from '../../src/engine/progress/progress-reporter.js';
import { busLogger } from '../../src/engine/run/engine.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import type { RunRecord } from '../../src/store/types.js';
import { createUiServer } from '../../src/ui/server.js';
import { ManualClock } from '../../src/util/clock.js';
import { FakeTerminal } from '../engine-schedule/fake-terminal.js';
import { cli } from '../support/cli.js';
import { project } from '../support/project.js';
import { redisReachable, redisUrl } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const repoFile = (rel: string) => readFileSync(new URL(`../../${rel}`, import.meta.url), 'utf8');

/** The repo's flow, unpaced (a ManualClock does not move between checks); its pause stays the demo's 2h. */
const FLOW = repoFile('flows/check-leads.yaml').replace('pace: { delay: 1s, jitter: 0.3 }', 'pace: { delay: 0 }');

/** The demo's network; the service allows 5 new numbers per 10 minutes and then asks for 1 minute. */
const config = (store: string) => `instances:
  default:
    apiUrl: local
    rateLimit: false
local:
  port: 0
  network:
    accounts:
      - { phone: 79001112233, username: "@alice", name: Alice }
      - { phone: 79002223344, username: "@bob", name: Bob }
      - { phone: 79003334455, name: Carol }
      - { phone: 79004445566, username: "@dave", name: Dave }
      - { phone: 79005550000, hidden: true }
  instances:
    - idInstance: "1101000001"
      apiTokenInstance: lift-test-token-3b8e
      rateLimits: { checkAccount: 0 }
      checkAccountLimit: { numbers: 5, windowMinutes: 10, retryAfterSeconds: 60 }
${store}`;

const redisUp = await redisReachable();
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

interface Waiting {
  dir: string;
  runtime: Runtime;
  clock: ManualClock;
  runId: string;
  done: Promise<RunRecord>;
  /** The log lines, as `msgflow run` prints them without a terminal. */
  log: string[];
  term: FakeTerminal;
  /** The bars on `term`: print() redraws them under the line, as a log line does. */
  bars: ProgressReporter;
  until: number;
}

const open: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

/** check-leads started in a runtime of its own, once it waits on the pause (5 checked, the 6th refused). */
async function waitingOnPause(store = ''): Promise<Waiting> {
  const dir = project({ 'config.yaml': config(store), 'flows/check-leads.yaml': FLOW, 'data/leads.csv': repoFile('data/leads.csv') });
  const clock = new ManualClock(Date.now());
  const bus = createBus();
  const log: string[] = [];
  const reporter = createCliReporter({ bus, stream: { write: (c: string) => log.push(...c.trimEnd().split('\n')), isTTY: false }, clock });
  const term = new FakeTerminal(80);
  const bars = createProgressReporter({ bus, stream: term, clock });
  const runtime = await createRuntime({
    config: loadConfig(path.join(dir, 'config.yaml')),
    command: 'test',
    bus,
    clock,
    logger: busLogger(bus),
    waitRecheckMs: 5,
  });
  open.push(async () => {
    await runtime.close();
    reporter.close();
    bars.close();
  });
  const flow = runtime.flows().flows.find((f) => f.name === 'check-leads')!;
  const handle = await runtime.engine.start(flow, { trigger: 'manual' });
  // Waiting as the store and the log say it (the record is written before the event).
  const until = await waitFor('the run to wait on the pause', async () => {
    const r = await runtime.engine.getRun(handle.runId);
    return r?.status === 'waiting' && log.some((l) => l.includes('step check waiting')) ? r.waitingUntil : undefined;
  });
  return { dir, runtime, clock, runId: handle.runId, done: handle.done, log, term, bars, until };
}

/** After the service's own pause and window (11 minutes, far from msgflow's 2 hours), lifts and expects the run to finish. */
async function liftedRunSucceeds(w: Waiting, lift: () => Promise<unknown>): Promise<void> {
  await w.clock.advance(11 * MINUTE);
  expect((await w.runtime.engine.getRun(w.runId))?.status).toBe('waiting');
  await lift();
  const run = await waitFor(
    'the run to go on once the pause is lifted',
    async () => {
      const r = await w.runtime.engine.getRun(w.runId);
      return r?.status !== 'waiting' && r?.status !== 'running' ? r : undefined;
    },
    10_000,
  );
  await w.done;
  expect(run.status).toBe('succeeded');
  // No 2-hour wait: the clock never reached the pause's end, the service was asked again at once.
  expect(w.clock.now()).toBeLessThan(w.until);
  const [step] = await w.runtime.engine.getSteps(w.runId);
  expect(step!.output).toMatchObject({ exists: 4, none: 4, invalid: 4, duplicates: 2, checked: 8, pauses: 1 });
  expect(w.log.some((l) => l.includes("the pause of instance 'default' was lifted; checking again"))).toBe(true);
}

const count = (text: string, word: string) => text.split(word).length - 1;

describe('a pause that a user lifts', () => {
  it('while check-leads waits, the log, the 80-column bar, msgflow runs and msgflow pauses each say the reason once and the end once', async () => {
    const w = await waitingOnPause();
    const now = w.clock.now();
    expect(w.until - now).toBe(2 * HOUR);

    const waitingLine = w.log.find((l) => l.includes('step check waiting'))!;
    expect(waitingLine).toContain(
      `step check waiting until ${formatUntil(w.until, now)}: checkAccount paused by rate_limit_exceeded (retryAfter 1m)`,
    );
    for (const line of w.log) {
      expect(count(line, 'until'), line).toBeLessThanOrEqual(1);
      expect(count(line, 'rate_limit_exceeded'), line).toBeLessThanOrEqual(1);
    }

    w.bars.print('a log line'); // the bar is drawn again under it
    const bar = w.term.screen.at(-1)!;
    expect(bar.length).toBeLessThanOrEqual(79);
    // Rows read ahead by the records in flight (invalid, duplicate) are counted as they are resolved.
    expect(bar).toMatch(/^check-leads\/check \[#+\.*\] \d+\/14 waiting until /);
    expect(bar).toContain(`until ${formatUntil(w.until, now)}: checkAccount`);

    const runs = await cli(['runs'], w.dir);
    const [header, row, detail, ...rest] = runs.stdout.trimEnd().split('\n');
    expect(header).toMatch(/STATUS/);
    // the run's counters as the bar has them: the 5 checks done before the pause
    expect(row).toMatch(/^check-leads-\S+ +check-leads +waiting +.* 5 done(, 4 invalid)?(, 2 duplicate)?$/);
    expect(rest).toEqual([]);
    expect(detail!.length).toBeLessThanOrEqual(80);
    expect(detail).toContain(
      `waiting until ${formatUntil(w.until, Date.now(), { utc: true })}: checkAccount paused by rate_limit_exceeded`,
    );
    expect(count(detail!, 'until')).toBe(1);

    const pauses = await cli(['pauses'], w.dir);
    const lines = pauses.stdout.trimEnd().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(/^INSTANCE +SCOPE +UNTIL +REASON$/),
      expect.stringMatching(/^default +checkAccount +\d\d:\d\dZ \((1h59m|2h00m)\) +rate_limit_exceeded \(retryAfter 1m\)$/),
      'lift with: msgflow pauses lift default',
    ]);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
    expect(count(pauses.stdout, 'paused')).toBe(0);
  });

  it('msgflow pauses lift, over its own store handle (another process), ends the wait at once and the run checks the rest', async () => {
    const w = await waitingOnPause();
    await liftedRunSucceeds(w, async () => {
      const r = await cli(['pauses', 'lift', 'default'], w.dir);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('lifted: default');
    });
    expect((await cli(['runs'], w.dir)).stdout).toMatch(/check-leads +succeeded/);
  });

  it("the dashboard's Lift, in the daemon's own process, ends the wait at once", async () => {
    const w = await waitingOnPause();
    const server = await createUiServer({ runtime: w.runtime, port: 0 });
    open.push(() => server.close());
    await liftedRunSucceeds(w, async () => {
      // What the page's Lift button sends.
      const res = await fetch(`${server.url}/api/instances/default/pauses/lift`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      });
      expect(await res.json()).toEqual({ instance: 'default', lifted: 1 });
    });
  });

  it.skipIf(!redisUp)('on the redis driver: msgflow pauses lift from another connection ends the wait at once', async () => {
    const prefix = `msgflow-test:${randomBytes(6).toString('hex')}:`;
    open.push(async () => {
      const r = new Redis(redisUrl);
      const keys = await r.keys(`${prefix}*`);
      if (keys.length > 0) await r.del(...keys);
      r.disconnect();
    });
    const w = await waitingOnPause(`store:\n  driver: redis\n  url: ${redisUrl}\n  prefix: "${prefix}"\n`);
    await liftedRunSucceeds(w, () => cli(['pauses', 'lift', 'default'], w.dir));
  });
});
