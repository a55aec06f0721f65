/**
 * Per-item conditions, data functions and the budgets that stop expression
 * poison pills: filter/map with arrow lambdas, digits,
 * formatDate, now() on the engine clock, `if:` with `item`, and budgets.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { evaluateTemplate } from '../../src/engine/expr/template.js';
import { ExpressionError, ExpressionLimitError } from '../../src/engine/expr/errors.js';
import { parseExpression } from '../../src/engine/expr/parser.js';
import type { ExprScope } from '../../src/engine/expr/interpreter.js';
import { FlowFileError } from '../../src/engine/flow/errors.js';
import { loadFlowFile } from '../../src/engine/flow/load.js';
import { createEngine } from '../../src/engine/run/engine.js';
import { createBus } from '../../src/engine/events.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { ManualClock } from '../../src/util/clock.js';
import type { InstanceApi } from '../../src/api/types.js';
import { builtinRegistry, tempProject } from './helpers.js';

const T = Date.parse('2026-01-05T09:30:15.250Z');
const scope = (extra: Partial<ExprScope> = {}): ExprScope => ({
  inputs: {
    leads: [
      { phone: '+7 (900) 111-22-33', country: 'DE', score: '7' },
      { phone: '7900-555-00-00', country: 'FR', score: '3' },
      { phone: '49 151 2345', country: 'DE', score: '1' },
    ],
  },
  env: {},
  steps: {},
  run: { id: 'r1', flow: 'f', startedAt: T },
  ...extra,
});
const ev = (text: string, s: ExprScope = scope()) => evaluateTemplate(`\${{ ${text} }}`, s);

describe('data functions', () => {
  it('filter and map take an arrow lambda, parsed by the interpreter (no eval)', () => {
    expect(ev("filter(inputs.leads, x => x.country == 'DE')")).toEqual([
      (scope().inputs.leads as unknown[])[0],
      (scope().inputs.leads as unknown[])[2],
    ]);
    expect(ev('map(inputs.leads, (lead) => digits(lead.phone))')).toEqual(['79001112233', '79005550000', '491512345']);
    expect(ev("length(filter(inputs.leads, x => x.score > 2 && x.country != 'FR'))")).toBe(1);
    // Nested lambdas see their own parameter and the outer one.
    expect(ev('map([1, 2], a => map([10, 20], b => a * b))')).toEqual([
      [10, 20],
      [20, 40],
    ]);
    // A parameter named item shadows the forEach item inside the lambda only.
    expect(ev('map(inputs.leads, item => item.country)', scope({ item: 'outer' }))).toEqual(['DE', 'FR', 'DE']);
    expect(ev('item', scope({ item: 'outer' }))).toBe('outer');
  });

  it('lambdas only where a function takes one; a clear error elsewhere', () => {
    expect(() => parseExpression('x => x')).toThrow(/only allowed as an argument of filter, map/);
    expect(() => parseExpression('length(x => x)')).toThrow(/length\(\) takes no lambda/);
    expect(() => parseExpression('filter(inputs.leads, inputs.x)')).toThrow(/filter\(\) needs a lambda as argument 2/);
    expect(() => parseExpression('map(inputs.leads, x => y)')).toThrow(/unknown name 'y'/);
    expect(() => parseExpression('map(inputs.leads, now => 1)')).toThrow(/'now' cannot name a lambda parameter/);
  });

  it('digits, formatDate and now()', () => {
    expect(ev("digits('+7 (900) 111-22-33')")).toBe('79001112233');
    expect(ev('digits(79001112233)')).toBe('79001112233');
    expect(ev('digits(null)')).toBe('');
    expect(ev(`formatDate(${T})`)).toBe('2026-01-05 09:30');
    expect(ev(`formatDate('2026-01-05T09:30:15.250Z', 'DD.MM.YYYY HH:mm:ss.SSS', 'Europe/Berlin')`)).toBe('05.01.2026 10:30:15.250');
    expect(() => ev("formatDate('soon')")).toThrow(/'soon' is not a time/);
    expect(() => ev(`formatDate(${T}, 'YYYY', 'Mars/Base')`)).toThrow(/unknown time zone 'Mars\/Base'/);
    const clock = new ManualClock(T);
    expect(ev('now()', scope({ clock }))).toBe(T);
    expect(ev("formatDate(now() + 3600000, 'HH:mm')", scope({ clock }))).toBe('10:30');
  });
});

describe('`if:` with item', () => {
  const flowText = (forEach: boolean) =>
    [
      'name: per-item',
      'inputs:',
      '  leads: { value: [{ country: DE }, { country: FR }] }',
      'steps:',
      '  - id: hello',
      '    uses: log',
      ...(forEach ? ['    forEach: ${{ inputs.leads }}'] : []),
      "    if: ${{ item.country == 'DE' }}",
      '    with: { message: hi }',
      '',
    ].join('\n');

  it('on a forEach step, `if:` reading item validates OK (evaluated per item by the runner)', () => {
    const dir = tempProject({ 'flows/a.yaml': flowText(true) });
    expect(() => loadFlowFile(path.join(dir, 'flows/a.yaml'), { registry: builtinRegistry(), baseDir: dir, env: {} })).not.toThrow();
  });

  it('on a step without forEach, `if:` reading item is a validation error with its position', () => {
    const dir = tempProject({ 'flows/b.yaml': flowText(false) });
    let err: unknown;
    try {
      loadFlowFile(path.join(dir, 'flows/b.yaml'), { registry: builtinRegistry(), baseDir: dir, env: {} });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FlowFileError);
    expect((err as FlowFileError).errors.map((e) => e.message.split(dir + path.sep).join(''))).toEqual([
      expect.stringMatching(/^flows\/b\.yaml:7:\d+ steps\[0\]\.if: .*'item' is only set in a step with forEach/),
    ]);
  });
});

/** 1.7 KB: twelve nested replaces, each multiplying the text by ten, split and measured. */
function poisonPill(): string {
  let s = "'aaaaaaaaaa'";
  for (let i = 0; i < 12; i++) s = `replace(${s}, 'a', 'aaaaaaaaaa')`;
  const parts = Array.from({ length: 5 }, () => `split(${s}, '')`);
  return `length([${parts.join(', ')}])`;
}

describe('expression budgets', () => {
  it('the 1.7 KB replace/split poison pill fails fast with EXPRESSION_LIMIT, not an out-of-memory abort', () => {
    const pill = poisonPill();
    expect(pill.length).toBeGreaterThan(1600);
    expect(pill.length).toBeLessThan(4096);
    let err: unknown;
    try {
      ev(pill);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ExpressionLimitError);
    expect((err as ExpressionLimitError).code).toBe('EXPRESSION_LIMIT');
    expect((err as Error).message).toMatch(/replace\(\) would build a string of 10000000 characters \(limit 1000000\)/);
  });

  it('string, array and step budgets each stop an evaluation', () => {
    const small = scope({ limits: { maxStringLength: 100, maxArrayLength: 10, maxSteps: 1000 } });
    expect(() => ev("'x' + join(map([1,2,3,4,5,6,7,8,9], n => 'aaaaaaaaaaaa'), '')", small)).toThrow(ExpressionLimitError);
    expect(() => ev("split('a,b,c,d,e,f,g,h,i,j,k,l', ',')", small)).toThrow(/array of 12 items is longer than the 10 allowed/);
    expect(() =>
      ev('map([1,2,3,4,5,6,7,8,9], a => map([1,2,3,4,5,6,7,8,9], b => map([1,2,3,4,5,6,7,8,9], c => a + b + c)))', small),
    ).toThrow(/more than 1000 evaluation steps/);
    // Under the budgets, the same kinds of expressions work.
    expect(ev("join(['a', 'b'], '-')", small)).toBe('a-b');
  });

  it('in a run, the poison pill fails the step with EXPRESSION_LIMIT naming file:line:col', async () => {
    const dir = tempProject({
      'flows/pill.yaml': [
        'name: pill',
        'steps:',
        '  - id: boom',
        '    uses: log',
        '    with:',
        `      message: "\${{ ${poisonPill()} }}"`,
        '',
      ].join('\n'),
    });
    const registry = builtinRegistry();
    const flow = loadFlowFile(path.join(dir, 'flows/pill.yaml'), { registry, baseDir: dir, env: {} });
    const engine = createEngine({
      store: createMemoryStore(),
      registry,
      bus: createBus(),
      clientFor: () => ({}) as InstanceApi,
      baseDir: dir,
    });
    const run = await (await engine.start(flow, { trigger: 'manual' })).done;
    expect(run.status).toBe('failed');
    expect(run.error?.message).toMatch(
      /flows\/pill\.yaml:6:16 \(col \d+ of the value\): expression \$\{\{ length\(\[split\(replace.*stopped: replace\(\) would build a string/,
    );
    expect((run.error as { code?: string }).code).toBe('EXPRESSION_LIMIT');
  });

  it('an ordinary expression error in a run names the file position too', async () => {
    const dir = tempProject({
      'flows/e.yaml': ['name: e', 'steps:', '  - id: bad', '    uses: log', '    with:', `      message: "n=\${{ number('x') }}"`, ''].join(
        '\n',
      ),
    });
    const registry = builtinRegistry();
    const flow = loadFlowFile(path.join(dir, 'flows/e.yaml'), { registry, baseDir: dir, env: {} });
    const engine = createEngine({
      store: createMemoryStore(),
      registry,
      bus: createBus(),
      clientFor: () => ({}) as InstanceApi,
      baseDir: dir,
    });
    const run = await (await engine.start(flow, { trigger: 'manual' })).done;
    expect(run.error?.message).toMatch(
      /flows\/e\.yaml:6:16 \(col 7 of the value\): expression error in \$\{\{ number\('x'\) \}\}: number\(\): argument 1 must be a number/,
    );
    expect(new ExpressionError('x', 0, 'r').code).toBe('EXPRESSION_ERROR');
  });

  it('two flows with the same template text each name their own position', async () => {
    const message = `      message: "n=\${{ number('x') }}"`;
    const dir = tempProject({
      'flows/first.yaml': ['name: first', 'steps:', '  - id: bad', '    uses: log', '    with:', message, ''].join('\n'),
      'flows/second.yaml': [
        'name: second',
        '# the same value, lower down',
        '',
        'steps:',
        '  - id: bad',
        '    uses: log',
        '    with:',
        message,
        '',
      ].join('\n'),
    });
    const registry = builtinRegistry();
    // Both loaded before either runs, as a daemon loads every flow.
    const first = loadFlowFile(path.join(dir, 'flows/first.yaml'), { registry, baseDir: dir, env: {} });
    const second = loadFlowFile(path.join(dir, 'flows/second.yaml'), { registry, baseDir: dir, env: {} });
    const engine = createEngine({
      store: createMemoryStore(),
      registry,
      bus: createBus(),
      clientFor: () => ({}) as InstanceApi,
      baseDir: dir,
    });
    const a = await (await engine.start(first, { trigger: 'manual' })).done;
    const b = await (await engine.start(second, { trigger: 'manual' })).done;
    expect(a.error?.message).toMatch(/flows\/first\.yaml:6:16 \(col 7 of the value\): expression error/);
    expect(b.error?.message).toMatch(/flows\/second\.yaml:8:16 \(col 7 of the value\): expression error/);
  });
});

describe('the local service URL is written once (`${{ local.url }}`)', () => {
  it('`${{ local.url }}` gives the local service base URL; a run without one says so', () => {
    expect(evaluateTemplate('${{ local.url }}/_local/static/brochure.pdf', scope({ local: { url: 'http://127.0.0.1:7070' } }))).toBe(
      'http://127.0.0.1:7070/_local/static/brochure.pdf',
    );
    expect(() => evaluateTemplate('${{ local.url }}/x', scope())).toThrow(/'local' is not set: this run has no local service/);
  });

  it('validation knows local.url only', () => {
    const dir = tempProject({ 'flows/l.yaml': 'name: l\nsteps:\n  - { id: a, uses: log, with: { message: "${{ local.port }}" } }\n' });
    expect(() => loadFlowFile(path.join(dir, 'flows/l.yaml'), { registry: builtinRegistry(), baseDir: dir, env: {} })).toThrow(
      /local has no 'port'.*use url/,
    );
  });
});
