import { describe, expect, it } from 'vitest';
import { evaluateCondition, evaluateTemplate, parseTemplate } from '../../src/engine/expr/template.js';
import { ExpressionError } from '../../src/engine/expr/errors.js';
import { parseExpression } from '../../src/engine/expr/parser.js';
import { collectReferences } from '../../src/engine/expr/references.js';
import type { ExprScope } from '../../src/engine/expr/interpreter.js';

function scope(extra: Partial<ExprScope> = {}): ExprScope {
  return {
    inputs: {
      leads: [
        { phone: '79001112233', name: 'Alice' },
        { phone: '79002223344', name: 'Bob' },
      ],
      n: 3,
      greeting: 'Hi',
    },
    env: { REGION: 'eu' },
    steps: {
      check: {
        status: 'succeeded',
        output: [{ exist: true }, { exist: false }],
        done: 2,
        failed: 1,
        total: 3,
        results: [{ exist: true }, { exist: false }],
      },
    },
    run: { id: 'r1', flow: 'verify', startedAt: 1_700_000_000_000 },
    ...extra,
  };
}

const ev = (text: string, s: ExprScope = scope()) => evaluateTemplate(`\${{ ${text} }}`, s);

describe('expressions: values', () => {
  it('reads paths, indexes and lengths', () => {
    expect(ev('inputs.leads[1].name')).toBe('Bob');
    expect(ev("inputs['leads'][0]['phone']")).toBe('79001112233');
    expect(ev('inputs.leads.length')).toBe(2);
    expect(ev('steps.check.failed')).toBe(1);
    expect(ev('env.REGION')).toBe('eu');
    expect(ev('run.flow')).toBe('verify');
    expect(ev('item.phone', scope({ item: { phone: '1' }, index: 4 }))).toBe('1');
    expect(ev('index', scope({ item: 1, index: 4 }))).toBe(4);
  });

  it('reads missing properties as undefined, as CI workflow expressions do', () => {
    expect(ev('inputs.nope')).toBeUndefined();
    expect(ev('inputs.nope.deeper.still')).toBeUndefined();
    expect(ev('inputs.leads[5].name')).toBeUndefined();
  });

  it('has literals, arithmetic, comparisons, boolean logic, ternary and ??', () => {
    expect(ev("'a\\'b' + \"c\"")).toBe("a'bc");
    expect(ev('1 + 2 * 3 - 4 / 2 % 3')).toBe(5);
    expect(ev('-(2 + 3)')).toBe(-5);
    expect(ev('steps.check.failed > 0 && steps.check.done >= 2')).toBe(true);
    expect(ev('!(inputs.n == 3) || false')).toBe(false);
    expect(ev("inputs.nope || 'fallback'")).toBe('fallback');
    expect(ev("inputs.nope ?? 'dflt'")).toBe('dflt');
    expect(ev('0 ?? 5')).toBe(0);
    expect(ev("inputs.n > 2 ? 'many' : 'few'")).toBe('many');
    expect(ev('[1, inputs.n, null]')).toEqual([1, 3, null]);
    expect(ev("'79001112233' == 79001112233")).toBe(true); // CSV strings against numbers
    expect(ev("'10' > '9'")).toBe(true); // numeric strings compare as numbers
    expect(ev("'b' > 'a'")).toBe(true);
    expect(ev('null == inputs.nope')).toBe(true);
  });

  it('has the documented functions', () => {
    expect(ev('length(inputs.leads)')).toBe(2);
    expect(ev("contains(pluck(inputs.leads, 'name'), 'Bob')")).toBe(true);
    expect(ev("contains('hello', 'ell')")).toBe(true);
    expect(ev("startsWith(inputs.greeting, 'H') && endsWith('abc', 'c')")).toBe(true);
    expect(ev("upper(lower('MiXeD')) + trim('  x ')")).toBe('MIXEDx');
    expect(ev("join(split('a,b,c', ','), '-')")).toBe('a-b-c');
    expect(ev("format('{0} has {1} leads', run.flow, length(inputs.leads))")).toBe('verify has 2 leads');
    expect(ev('fromJSON(toJSON(inputs.leads))[0].name')).toBe('Alice');
    expect(ev("number('42') + round(2.567, 2)")).toBe(44.57);
    expect(ev('sum([1, 2, 3]) + max(1, 9) + min([4, 2])')).toBe(17);
    expect(ev('keys(inputs.leads[0])')).toEqual(['phone', 'name']);
    expect(ev("coalesce(inputs.nope, '', 'x')")).toBe('x');
    expect(ev("replace('a.b.c', '.', '/')")).toBe('a/b/c');
    expect(ev("slice('abcdef', 1, 3)")).toBe('bc');
    expect(ev("string(3) + boolean('false')")).toBe('3false');
  });

  it('a lone ${{ }} yields the raw value; mixed text interpolates', () => {
    const s = scope({ item: { phone: 79001112233 } });
    expect(evaluateTemplate('${{ inputs.leads }}', s)).toBe(s.inputs.leads);
    expect(evaluateTemplate('  ${{ item.phone }} ', s)).toBe(79001112233);
    expect(evaluateTemplate('${{ steps.check.failed }} checks failed', s)).toBe('1 checks failed');
    expect(evaluateTemplate('a ${{ inputs.nope }}b ${{ [1] }}', s)).toBe('a b [1]');
    expect(evaluateTemplate("${{ '}}' }}", s)).toBe('}}');
    expect(evaluateTemplate({ phoneNumber: '${{ item.phone }}', list: ['x', '${{ 1 + 1 }}'], n: 5, flag: true }, s)).toEqual({
      phoneNumber: 79001112233,
      list: ['x', 2],
      n: 5,
      flag: true,
    });
    expect(evaluateTemplate('no templates here', s)).toBe('no templates here');
  });

  it('evaluates conditions, bare or in ${{ }}', () => {
    expect(evaluateCondition('${{ steps.check.failed > 0 }}', scope())).toBe(true);
    expect(evaluateCondition('steps.check.failed > 5', scope())).toBe(false);
    expect(evaluateCondition('inputs.nope', scope())).toBe(false);
    expect(evaluateCondition(true, scope())).toBe(true);
    expect(evaluateCondition('false', scope())).toBe(false);
  });

  it('type errors name the problem instead of producing NaN', () => {
    expect(() => ev('inputs.leads - 1')).toThrow(/needs numbers, got array/);
    expect(() => ev('inputs.n / 0')).toThrow(/division by zero/);
    expect(() => ev("number('abc')")).toThrow(/number\(\): argument 1 must be a number/);
    expect(() => ev("inputs.leads + 'x'")).toThrow(/cannot add a array and a string/);
  });
});

describe('expressions: parse errors carry a position', () => {
  const cases: Array<[string, number, RegExp]> = [
    ['inputs.', 7, /expected a property name/],
    ['1 +', 3, /unexpected end of expression/],
    ['input.leads', 0, /unknown name 'input' \(did you mean 'inputs'\?\)/],
    ['lenght(inputs.leads)', 0, /unknown function 'lenght' \(did you mean 'length'\?\)/],
    ['inputs.a = 1', 9, /use '==' to compare/],
    ["'open", 0, /unterminated string/],
    ['length(1, 2)', 0, /takes 1 argument, got 2/],
    ['(1 + 2', 6, /expected '\)'/],
    ['inputs.greeting.toUpperCase()', 27, /method calls are not supported/],
  ];
  for (const [text, offset, re] of cases) {
    it(`${text}`, () => {
      try {
        parseExpression(text);
        expect.unreachable();
      } catch (e) {
        expect(e).toBeInstanceOf(ExpressionError);
        expect((e as ExpressionError).reason).toMatch(re);
        expect((e as ExpressionError).offset).toBe(offset);
        expect((e as ExpressionError).code).toBe('EXPRESSION_ERROR');
      }
    });
  }

  it('template errors give the offset in the whole string', () => {
    try {
      parseTemplate('Hi ${{ inputs. }}!');
      expect.unreachable();
    } catch (e) {
      expect((e as ExpressionError).templateOffset).toBe(15);
    }
    expect(() => parseTemplate('Hi ${{ inputs.x ')).toThrow(/never closed/);
  });

  it('refuses absurd nesting and length', () => {
    expect(() => parseExpression('('.repeat(200) + '1' + ')'.repeat(200))).toThrow(/nests deeper/);
    expect(() => parseExpression('!'.repeat(200) + 'true')).toThrow(/nests deeper/);
    expect(() => parseExpression('1+'.repeat(3000) + '1')).toThrow(/longer than/);
  });

  it('collects the scope paths an expression reads', () => {
    const refs = collectReferences(parseExpression('steps.check.failed > 0 && inputs[env.KEY].x || length(item.phone)'));
    expect(refs.map((r) => [r.root, r.path])).toEqual([
      ['steps', ['check', 'failed']],
      ['inputs', []],
      ['env', ['KEY']],
      ['item', ['phone']],
    ]);
  });
});
