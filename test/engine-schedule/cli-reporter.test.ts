/**
 * Terminal output that neither hides nor garbles lines, and no ETA during a
 * wait: the CLI reporter drawn on a fake terminal that
 * interprets the escape sequences, fed by real engine events of YAML flows.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../../src/util/clock.js';
import { createBus } from '../../src/engine/events.js';
import { createCliReporter } from '../../src/engine/progress/cli-reporter.js';
import { formatUntil } from '../../src/engine/progress/format.js';
import { formatSpan } from '../../src/util/duration.js';
import { defineAction } from '../../src/engine/action.js';
import { loadFlowFile } from '../../src/engine/flow/load.js';
import { createEngine } from '../../src/engine/run/engine.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { InstanceApi } from '../../src/api/types.js';
import { builtinRegistry, tempProject } from '../engine-load/helpers.js';
import path from 'node:path';
import { FakeTerminal } from './fake-terminal.js';

const T0 = Date.parse('2026-01-05T09:00:00Z');
const ref = { runId: 'r1', flow: 'leads' };

describe('one channel for bars and log lines', () => {
  it('log lines print above the bar, never glued to it, and no bar fragment stays per warning', () => {
    const clock = new ManualClock(T0);
    const bus = createBus();
    const term = new FakeTerminal();
    const rep = createCliReporter({ bus, stream: term, clock, level: 'info' });
    bus.emit('step:started', { ...ref, step: 'check', action: 'checkAccount', total: 300 });
    for (let i = 0; i < 22; i++) bus.emit('item:finished', { ...ref, step: 'check', index: i, status: 'succeeded' });
    for (let w = 0; w < 3; w++) {
      bus.emit('log', { level: 'warn', message: `warning number ${w}` });
      bus.emit('item:finished', { ...ref, step: 'check', index: 22 + w, status: 'failed', error: 'HTTP 500' });
    }
    const screen = term.screen;
    const bars = screen.filter((l) => l.includes('leads/check ['));
    expect(bars).toHaveLength(1); // one bar, no stale fragment per warning
    expect(screen.at(-1)).toContain('leads/check ['); // the bar stays below the log lines
    for (const l of screen.slice(0, -1)) expect(l).toMatch(/^\d\d:\d\d:\d\d (INFO |WARN ) /);
    expect(screen.filter((l) => /warning number \d$/.test(l))).toHaveLength(3);
    expect(screen.join('\n')).not.toMatch(/ETA [\d:-]+\d\d:\d\d:\d\d/); // nothing glued after an ETA
    rep.close();
    expect(term.screen.some((l) => l.includes('['))).toBe(false); // close clears the bar
  });

  it('two steps running at once: two bars under the log lines; one ends, its bar goes, no fragment stays', () => {
    const clock = new ManualClock(T0);
    const bus = createBus();
    const term = new FakeTerminal(200);
    const rep = createCliReporter({ bus, stream: term, clock, level: 'info' });
    bus.emit('step:started', { ...ref, step: 'a', action: 'x', total: 10 });
    bus.emit('step:started', { runId: 'r2', flow: 'other', step: 'b', action: 'x', total: 20 });
    for (let i = 0; i < 5; i++) {
      bus.emit('item:finished', { ...ref, step: 'a', index: i, status: 'succeeded' });
      bus.emit('log', { level: 'warn', message: `w${i}` });
    }
    let screen = term.screen;
    expect(screen.slice(-2).map((l) => l.split(' [')[0])).toEqual(['leads/a', 'other/b']);
    expect(screen.filter((l) => l.includes(' ['))).toHaveLength(2);
    bus.emit('step:finished', { ...ref, step: 'a', status: 'succeeded', done: 10, failed: 0 });
    rep.logger.info('after');
    screen = term.screen;
    expect(screen.filter((l) => l.includes(' ['))).toEqual([expect.stringMatching(/^other\/b \[/)]);
    expect(screen.at(-1)).toMatch(/^other\/b \[/);
    for (const l of screen.slice(0, -1)) expect(l).toMatch(/^\d\d:\d\d:\d\d (INFO |WARN ) \S/);
    rep.close();
    expect(term.screen.some((l) => l.includes(' ['))).toBe(false);
  });

  it('no bar for a 1-item step; `log` steps show at info on a terminal; --log-level warn hides them', () => {
    const bus = createBus();
    const term = new FakeTerminal();
    const rep = createCliReporter({ bus, stream: term, clock: new ManualClock(T0) });
    bus.emit('step:started', { ...ref, step: 'one', action: 'checkAccount', total: 1 });
    bus.emit('item:finished', { ...ref, step: 'one', index: 0, status: 'succeeded' });
    bus.emit('log', { level: 'info', message: 'hello from a log step' });
    expect(term.writes.join('')).not.toContain('[');
    expect(term.screen.some((l) => l.endsWith('INFO  hello from a log step'))).toBe(true);
    rep.close();
    const quiet = new FakeTerminal();
    const rep2 = createCliReporter({ bus, stream: quiet, clock: new ManualClock(T0), level: 'warn' });
    bus.emit('log', { level: 'info', message: 'hello again' });
    bus.emit('log', { level: 'warn', message: 'careful' });
    expect(quiet.screen).toEqual([expect.stringMatching(/WARN {2}careful$/)]);
    rep2.close();
  });

  it('while waiting the bar shows the reason and the end, never an ETA from a rate', () => {
    const clock = new ManualClock(T0);
    const bus = createBus();
    const term = new FakeTerminal(200);
    const rep = createCliReporter({ bus, stream: term, clock, level: 'warn' });
    bus.emit('step:started', { ...ref, step: 'check', action: 'checkAccount.bulk', total: 1 });
    bus.emit('step:progress', { ...ref, step: 'check', done: 100, total: 300 });
    const until = T0 + 6_720_000;
    bus.emit('run:waiting', { ...ref, step: 'check', until, reason: 'checkAccount paused by rate_limit_exceeded' });
    rep.logger.warn('tick'); // forces a redraw
    const bar = term.screen.at(-1)!;
    expect(bar).toContain(`100/300 (100 done) waiting until ${formatUntil(until, T0)}: checkAccount paused by rate_limit_exceeded`);
    expect(bar).toContain('(1h52m)');
    expect(bar).not.toContain('ETA');
    rep.close();
  });

  it('on an 80-column terminal a waiting bar fits, and keeps the end of the wait: the reason is cut, never the end', () => {
    const clock = new ManualClock(T0);
    const bus = createBus();
    const term = new FakeTerminal(80);
    const rep = createCliReporter({ bus, stream: term, clock, level: 'warn' });
    const wide = new FakeTerminal(160);
    const rep2 = createCliReporter({ bus, stream: wide, clock, level: 'warn' });
    bus.emit('step:started', { runId: 'r1', flow: 'check-leads', step: 'check', action: 'checkAccount.bulk', total: 14 });
    bus.emit('step:progress', { runId: 'r1', flow: 'check-leads', step: 'check', done: 5, total: 14 });
    const until = T0 + 2 * 3_600_000;
    const reason = 'checkAccount paused by rate_limit_exceeded (retryAfter 2h)';
    bus.emit('run:waiting', { runId: 'r1', flow: 'check-leads', step: 'check', until, reason });
    rep.logger.warn('tick'); // forces a redraw
    const bar = term.screen.at(-1)!;
    expect(bar.length).toBeLessThanOrEqual(79);
    expect(bar).toMatch(/^check-leads\/check \[#+\.+\] 5\/14 /);
    expect(bar).toContain(`waiting until ${formatUntil(until, T0)}: checkAccount`);
    expect(bar).toMatch(/…$/);
    // a wider terminal shows it all, with the counters
    rep2.logger.warn('tick');
    expect(wide.screen.at(-1)).toBe(
      `check-leads/check [#######.............] 5/14 (5 done) waiting until ${formatUntil(until, T0)}: ${reason}`,
    );
    rep.close();
    rep2.close();
  });

  it('invalid, duplicate and skipped records are their own counts in the bar, not "failed"', () => {
    const bus = createBus();
    const term = new FakeTerminal(200);
    const rep = createCliReporter({ bus, stream: term, clock: new ManualClock(T0), level: 'warn' });
    bus.emit('step:started', { ...ref, step: 'check', action: 'checkAccount.bulk', total: 1 });
    bus.emit('step:progress', { ...ref, step: 'check', done: 30, failed: 0, total: 42, invalid: 4, duplicate: 2, skipped: 2 });
    rep.logger.warn('x');
    expect(term.screen.at(-1)).toContain('38/42 (30 done, 4 invalid, 2 duplicate, 2 skipped)');
    rep.close();
  });

  it('without a terminal, progress lines are info lines: none at --log-level warn', async () => {
    const clock = new ManualClock(T0);
    const bus = createBus();
    const chunks: string[] = [];
    const stream = { write: (c: string) => chunks.push(c), isTTY: false };
    const quiet = createCliReporter({ bus, stream, clock, level: 'warn' });
    bus.emit('step:started', { ...ref, step: 'check', action: 'x', total: 10 });
    bus.emit('item:finished', { ...ref, step: 'check', index: 0, status: 'succeeded' });
    await clock.advance(5000);
    bus.emit('step:finished', { ...ref, step: 'check', status: 'succeeded', done: 10, failed: 0 });
    expect(chunks).toEqual([]);
    quiet.close();
    const info = createCliReporter({ bus, stream, clock, level: 'info' });
    bus.emit('step:started', { ...ref, step: 'check', action: 'x', total: 10 });
    bus.emit('step:finished', { ...ref, step: 'check', status: 'succeeded', done: 10, failed: 0 });
    expect(chunks.join('')).toContain('leads check: 10/10 (10 done)');
    info.close();
  });

  it('a 33 s span reads 33s, two hours 2h00m', () => {
    expect(formatSpan(33_000)).toBe('33s');
    expect(formatSpan(7_200_000)).toBe('2h00m');
    expect(formatSpan(245_000)).toBe('4m05s');
  });

  it('--json-logs: one JSON object per line with the event and its fields, no bar, secrets redacted', () => {
    const bus = createBus();
    const term = new FakeTerminal();
    const rep = createCliReporter({
      bus,
      stream: term,
      clock: new ManualClock(T0),
      json: true,
      secrets: [{ apiTokenInstance: 'secret-token-123456' }],
    });
    bus.emit('step:started', { ...ref, step: 'check', action: 'checkAccount', total: 300 });
    bus.emit('item:finished', { ...ref, step: 'check', index: 0, status: 'failed', error: 'bad secret-token-123456' });
    bus.emit('log', { level: 'info', message: 'hi', fields: { n: 1 } });
    rep.logger.error('boom');
    rep.close();
    const lines = term.writes
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual([
      {
        level: 'info',
        time: '2026-01-05T09:00:00.000Z',
        event: 'step:started',
        runId: 'r1',
        flow: 'leads',
        step: 'check',
        action: 'checkAccount',
        total: 300,
        msg: 'leads/check started (checkAccount, 300 items)',
      },
      {
        level: 'warn',
        time: '2026-01-05T09:00:00.000Z',
        event: 'item:finished',
        runId: 'r1',
        flow: 'leads',
        step: 'check',
        index: 0,
        status: 'failed',
        error: 'bad <API_TOKEN>',
        msg: 'leads/check item 0 failed: bad <API_TOKEN>',
      },
      { level: 'info', time: '2026-01-05T09:00:00.000Z', event: 'log', n: 1, msg: 'hi' },
      { level: 'error', time: '2026-01-05T09:00:00.000Z', msg: 'boom' },
    ]);
  });
});

describe('real engine events of a YAML flow on a fake terminal', () => {
  it('a flow with a log step and a 40-item forEach with warnings leaves intact log lines and one bar', async () => {
    const dir = tempProject({
      'flows/demo.yaml': [
        'name: demo',
        'inputs:',
        '  n: { value: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40] }',
        'steps:',
        '  - id: hello',
        '    uses: log',
        '    with: { message: "starting the demo" }',
        '  - id: each',
        '    uses: noisy',
        '    forEach: ${{ inputs.n }}',
        '    with: { n: "${{ item }}" }',
        '',
      ].join('\n'),
    });
    const registry = builtinRegistry();
    registry.register(
      defineAction({
        name: 'noisy',
        description: 'warns on every tenth item',
        input: z.object({ n: z.number() }),
        output: { description: 'n' },
        run: async (ctx, input) => {
          if (input.n % 10 === 0) ctx.logger.warn(`item ${input.n} looks odd`);
          return input.n;
        },
      }),
      'test',
    );
    const flow = loadFlowFile(path.join(dir, 'flows/demo.yaml'), { registry, instances: ['default'], baseDir: dir });
    const bus = createBus();
    const term = new FakeTerminal();
    const rep = createCliReporter({ bus, stream: term, level: 'info' });
    const engine = createEngine({ store: createMemoryStore(), registry, bus, clientFor: () => ({}) as InstanceApi, baseDir: dir });
    const handle = await engine.start(flow, { trigger: 'manual' });
    const run = await handle.done;
    rep.close();
    expect(run.status).toBe('succeeded');
    const screen = term.screen;
    expect(screen.some((l) => l.endsWith('INFO  starting the demo'))).toBe(true);
    expect(screen.filter((l) => / WARN {2}item \d+ looks odd$/.test(l))).toHaveLength(4);
    // Every row is one whole log line: no bar text left behind, nothing glued.
    for (const l of screen) expect(l).toMatch(/^\d\d:\d\d:\d\d (INFO |WARN ) \S/);
    expect(screen.some((l) => l.includes('['))).toBe(false);
    expect(term.writes.join('')).toContain('demo/each ['); // the bar was drawn while the step ran
  });
});
