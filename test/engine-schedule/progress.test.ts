import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/util/clock.js';
import { createBus } from '../../src/engine/events.js';
import { FakeTerminal } from './fake-terminal.js';
import { createLogSubscriber } from '../../src/engine/progress/log-subscriber.js';
import { createProgressReporter } from '../../src/engine/progress/progress-reporter.js';
import { formatUntil, renderBar } from '../../src/engine/progress/format.js';
import { formatClock } from '../../src/util/duration.js';

function fakeStream(isTTY: boolean, columns?: number) {
  const chunks: string[] = [];
  return {
    chunks,
    isTTY,
    columns,
    write(chunk: string) {
      chunks.push(chunk);
      return true;
    },
    get text() {
      return chunks.join('');
    },
  };
}

const ref = { runId: 'r1', flow: 'verify-leads' };
const T0 = Date.parse('2026-01-05T09:00:00Z');

describe('format helpers', () => {
  it('durations and bars', () => {
    expect(formatClock(65_000)).toBe('01:05');
    expect(formatClock(3_725_000)).toBe('1:02:05');
    expect(renderBar(5, 10, 10)).toBe('[#####.....]');
    expect(renderBar(10, 10, 10)).toBe('[##########]');
    expect(renderBar(3, undefined, 4)).toBe('[?   ]');
  });
});

describe('progress on a TTY', () => {
  it('draws a bar with counts, rate and ETA, and clears it when the step ends', async () => {
    const clock = new ManualClock(T0);
    const bus = createBus();
    const term = new FakeTerminal(200);
    const progress = createProgressReporter({ bus, stream: term, clock });
    bus.emit('step:started', { ...ref, step: 'check', action: 'checkAccount', total: 100 });
    expect(term.screen).toEqual(['verify-leads/check [....................] 0/100 (0 done) 0 items/s ETA --:--']);
    await clock.advance(1100);
    for (let i = 0; i < 10; i++) bus.emit('item:finished', { ...ref, step: 'check', index: i, status: i === 3 ? 'failed' : 'succeeded' });
    progress.print('a log line');
    // 10 items in 1.1 s: 9.09/s, 90 left: 9.9 s
    expect(term.screen).toEqual([
      'a log line',
      'verify-leads/check [##..................] 10/100 (9 done, 1 failed) 9.09 items/s ETA 00:10',
    ]);
    bus.emit('step:finished', { ...ref, step: 'check', status: 'succeeded', done: 97, failed: 3 });
    expect(term.screen).toEqual(['a log line']);
    progress.close();
  });

  it('cuts bars to the terminal width; close clears them and unsubscribes', () => {
    const bus = createBus();
    const term = new FakeTerminal(30);
    const progress = createProgressReporter({ bus, stream: term, clock: new ManualClock(T0) });
    bus.emit('step:started', { ...ref, step: 'check', action: 'checkAccount', total: 5 });
    expect(term.screen).toEqual(['verify-leads/check [....................]'.slice(0, 29)]);
    progress.close();
    expect(term.screen).toEqual([]);
    const n = term.writes.length;
    bus.emit('item:finished', { ...ref, step: 'check', index: 0, status: 'succeeded' });
    expect(term.writes).toHaveLength(n); // unsubscribed
  });

  it("shows an action's own progress and ignores steps without items", () => {
    const bus = createBus();
    const term = new FakeTerminal(200);
    const clock = new ManualClock(T0);
    const progress = createProgressReporter({ bus, stream: term, clock });
    bus.emit('step:started', { ...ref, step: 'notify', action: 'log' });
    bus.emit('step:finished', { ...ref, step: 'notify', status: 'succeeded', done: 0, failed: 0 });
    expect(term.writes).toHaveLength(0);
    bus.emit('step:started', { ...ref, step: 'bulk', action: 'checkAccount.bulk' });
    bus.emit('step:progress', { ...ref, step: 'bulk', done: 40, total: 200, failed: 2 });
    expect(term.screen[0]).toContain('verify-leads/bulk [####................] 42/200 (40 done, 2 failed)');
    progress.close();
  });
  it("ends a job's single step with its own counts as the step's record has them (not the engine's 1 unit)", () => {
    const bus = createBus();
    const out = fakeStream(false);
    createProgressReporter({ bus, stream: out, clock: new ManualClock(T0) });
    bus.emit('step:started', { ...ref, step: 'bulk', action: 'checkAccount.bulk', total: 14 });
    bus.emit('step:progress', { ...ref, step: 'bulk', done: 5, total: 14, failed: 1 });
    bus.emit('step:finished', { ...ref, step: 'bulk', status: 'failed', done: 6, failed: 2, invalid: 4, duplicate: 2, total: 14 });
    expect(out.chunks.at(-1)).toMatch(/^verify-leads bulk: 14\/14 \(6 done, 2 failed, 4 invalid, 2 duplicate\)/);
  });
});

describe('progress without a TTY', () => {
  it('prints a plain line every interval while items move, and one at step end', async () => {
    const clock = new ManualClock(T0);
    const bus = createBus();
    const out = fakeStream(false);
    const progress = createProgressReporter({ bus, stream: out, clock });
    bus.emit('step:started', { ...ref, step: 'check', action: 'checkAccount', total: 1000 });
    for (let i = 0; i < 500; i++) bus.emit('item:finished', { ...ref, step: 'check', index: i, status: i < 5 ? 'failed' : 'succeeded' });
    expect(out.chunks).toHaveLength(0);
    await clock.advance(5000);
    expect(out.chunks).toEqual(['verify-leads check: 500/1000 (495 done, 5 failed), 100/s, ETA 00:05\n']);
    await clock.advance(5000); // no item moved: no line (e.g. a durable wait)
    expect(out.chunks).toHaveLength(1);
    for (let i = 500; i < 700; i++) bus.emit('item:finished', { ...ref, step: 'check', index: i, status: 'succeeded' });
    await clock.advance(5000);
    expect(out.chunks[1]).toBe('verify-leads check: 700/1000 (695 done, 5 failed), 46.7/s, ETA 00:06\n');
    bus.emit('step:finished', { ...ref, step: 'check', status: 'succeeded', done: 990, failed: 10 });
    expect(out.chunks[2]).toBe('verify-leads check: 1000/1000 (990 done, 10 failed), 46.7/s, done in 00:15\n');
    expect(out.text).not.toContain('\r');
    expect(clock.pending).toBe(0); // no timer left once no step runs
    progress.close();
  });

  it('honours intervalMs and forgets the steps of a failed run', async () => {
    const clock = new ManualClock(T0);
    const bus = createBus();
    const out = fakeStream(false);
    const progress = createProgressReporter({ bus, stream: out, clock, intervalMs: 1000 });
    bus.emit('step:started', { ...ref, step: 'check', action: 'checkAccount', total: 10 });
    bus.emit('item:finished', { ...ref, step: 'check', index: 0, status: 'succeeded' });
    await clock.advance(1000);
    expect(out.chunks).toEqual(['verify-leads check: 1/10 (1 done), 1.00/s, ETA 00:09\n']);
    bus.emit('run:failed', { ...ref, error: 'boom' });
    bus.emit('item:finished', { ...ref, step: 'check', index: 1, status: 'succeeded' });
    await clock.advance(3000);
    expect(out.chunks).toHaveLength(1);
    progress.close();
  });
});

describe('log subscriber', () => {
  it('prints readable lines with ISO timestamps, filtered by level, secrets redacted', () => {
    const clock = new ManualClock(T0);
    const bus = createBus();
    const out = fakeStream(false);
    const log = createLogSubscriber({
      bus,
      stream: out,
      level: 'info',
      clock,
      secrets: [{ idInstance: '1101000001', apiTokenInstance: 'd75b3a66374942c5b3c019c698abc2067e151558acbd412345' }],
    });
    bus.emit('run:started', { ...ref, trigger: 'schedule', dryRun: false });
    bus.emit('step:started', { ...ref, step: 'check', action: 'checkAccount', total: 3 });
    bus.emit('item:finished', { ...ref, step: 'check', index: 0, status: 'succeeded' }); // debug: dropped
    bus.emit('item:finished', {
      ...ref,
      step: 'check',
      index: 1,
      status: 'failed',
      error: 'HTTP 500 at /waInstance1101000001/checkAccount/d75b3a66374942c5b3c019c698abc2067e151558acbd412345',
    });
    bus.emit('step:retry', { ...ref, step: 'check', attempt: 1, delayMs: 2000, error: 'timeout', item: 2 });
    bus.emit('run:waiting', { ...ref, step: 'check', until: T0 + 7_200_000, reason: 'rate limit' });
    clock.set(T0 + 7_200_000);
    bus.emit('run:finished', { ...ref, durationMs: 7_205_000, itemsDone: 2, itemsFailed: 1, itemsInvalid: 0, itemsDuplicate: 3 });
    bus.emit('schedule:missed', { flow: 'verify-leads', scheduledAt: T0, policy: 'last', willRun: true });
    bus.emit('log', { level: 'error', message: 'first line\nsecond line' });
    expect(out.text.split('\n')).toEqual([
      '2026-01-05T09:00:00.000Z INFO  verify-leads (run r1) started (trigger schedule)',
      '2026-01-05T09:00:00.000Z INFO  verify-leads/check started (checkAccount, 3 items)',
      '2026-01-05T09:00:00.000Z WARN  verify-leads/check item 1 failed: HTTP 500 at /waInstance<INSTANCE_ID>/checkAccount/<API_TOKEN>',
      '2026-01-05T09:00:00.000Z WARN  verify-leads/check item 2 attempt 1 failed, retrying in 2s: timeout',
      `2026-01-05T09:00:00.000Z INFO  verify-leads (run r1) step check waiting until ${formatUntil(T0 + 7_200_000, T0)}: rate limit`,
      '2026-01-05T11:00:00.000Z INFO  verify-leads (run r1) finished in 2h00m: 2 done, 1 failed, 3 duplicate',
      '2026-01-05T11:00:00.000Z WARN  schedule: verify-leads missed its run of 2026-01-05T09:00:00.000Z (missed: last; running it now)',
      '2026-01-05T11:00:00.000Z ERROR first line',
      '    second line',
      '',
    ]);
    log.close();
    bus.emit('run:started', { ...ref, trigger: 'manual', dryRun: true });
    expect(out.text).not.toContain('trigger manual');
  });

  it('debug level shows item successes; error level only failures', () => {
    const bus = createBus();
    const debug = fakeStream(false);
    const errors = fakeStream(false);
    createLogSubscriber({ bus, stream: debug, level: 'debug', clock: new ManualClock(T0) });
    createLogSubscriber({ bus, stream: errors, level: 'error', clock: new ManualClock(T0) });
    bus.emit('item:finished', { ...ref, step: 'check', index: 0, status: 'succeeded' });
    bus.emit('step:finished', { ...ref, step: 'check', status: 'failed', done: 0, failed: 1, error: 'boom' });
    expect(debug.text).toContain('DEBUG verify-leads/check item 0 succeeded');
    expect(errors.text).toBe('2026-01-05T09:00:00.000Z ERROR verify-leads/check failed: 0 done, 1 failed: boom\n');
  });

  it('above debug it does not listen to the client calls (each call then skips timing itself), at debug it logs each', () => {
    const bus = createBus();
    const info = createLogSubscriber({ bus, stream: fakeStream(false), level: 'info', clock: new ManualClock(T0) });
    expect(bus.listenerCount('api:call')).toBe(0);
    expect(bus.listenerCount('step:progress')).toBe(0);
    expect(bus.listenerCount('run:started')).toBe(1);
    info.close();
    const debug = fakeStream(false);
    createLogSubscriber({ bus, stream: debug, level: 'debug', clock: new ManualClock(T0) });
    bus.emit('api:call', { method: 'checkAccount', instance: 'default', outcome: 'ok', durationMs: 12 });
    expect(debug.text).toContain('DEBUG api checkAccount on instance default: ok in');
  });
});
