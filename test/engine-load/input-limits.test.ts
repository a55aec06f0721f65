/** Poison pills, data side: a row limit on data inputs, counted while streaming. */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MsgflowError } from '../../src/api/errors.js';
import { loadFlowFile } from '../../src/engine/flow/load.js';
import { resolveInputs } from '../../src/engine/flow/inputs.js';
import { builtinRegistry, tempProject } from './helpers.js';

const flowWith = (inputs: string) => `name: big\ninputs:\n${inputs}\nsteps:\n  - { id: a, uses: log, with: { message: hi } }\n`;

function load(dir: string) {
  return loadFlowFile(path.join(dir, 'flows/f.yaml'), { registry: builtinRegistry(), baseDir: dir, env: {} });
}

async function failure(p: Promise<unknown>): Promise<MsgflowError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(MsgflowError);
    return e as MsgflowError;
  }
  throw new Error('expected a failure');
}

describe('data input row limits', () => {
  it("a CSV over the default 100,000 rows is refused with INPUT_TOO_LARGE pointing at the jobs' file:", async () => {
    const dir = tempProject({ 'flows/f.yaml': flowWith('  leads: { file: data/leads.csv }') });
    // 1,000,000 rows: the stream stops at row 100,001 instead of loading them all.
    const rows = Array.from({ length: 1_000_000 }, (_, i) => String(79000000000 + i));
    const file = path.join(dir, 'data', 'leads.csv');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `phone\n${rows.join('\n')}\n`);
    const err = await failure(resolveInputs(load(dir)));
    expect(err.code).toBe('INPUT_TOO_LARGE');
    expect(err.message).toMatch(
      /flows\/f\.yaml inputs\.leads: .*data\/leads\.csv has more than 100000 rows, the most a flow input may hold \(inputs\.leads\.maxRows\)/,
    );
    expect(err.message).toContain("give the file to the job's own file:");
  });

  it('maxRows per input, for CSV, JSON Lines and JSON; exactly maxRows is fine', async () => {
    const dir = tempProject({
      'flows/f.yaml': flowWith(
        ['  a: { file: data/a.csv, maxRows: 3 }', '  b: { file: data/b.jsonl, maxRows: 2 }', '  c: { file: data/c.json, maxRows: 2 }'].join(
          '\n',
        ),
      ),
      'data/a.csv': 'phone\n1\n2\n3\n',
      'data/b.jsonl': '{"n":1}\n{"n":2}\n{"n":3}\n',
      'data/c.json': '[1, 2]',
    });
    const err = await failure(resolveInputs(load(dir)));
    expect(err.message).toMatch(/inputs\.b: \S*data\/b\.jsonl has more than 2 rows/);
    const ok = await resolveInputs(load(dir), { b: path.join(dir, 'data/c.json') }).catch((e: Error) => e);
    // An override file is read under the same limit (c.json as b: 2 rows, fine).
    expect(ok).toEqual({ a: [{ phone: '1' }, { phone: '2' }, { phone: '3' }], b: [1, 2], c: [1, 2] });
    writeFileSync(path.join(dir, 'data/c.json'), '[1, 2, 3]');
    const big = await failure(resolveInputs(load(dir), { b: path.join(dir, 'data/c.json') }));
    expect(big.message).toMatch(/inputs\.b: .*has more than 2 rows/);
  });

  it('maxRows must be a positive integer (validated with its position)', () => {
    const dir = tempProject({ 'flows/f.yaml': flowWith('  a: { file: data/a.csv, maxRows: 0 }'), 'data/a.csv': 'x\n1\n' });
    expect(() => load(dir)).toThrow(/flows\/f\.yaml:3:\d+ inputs\.a\.maxRows:/);
  });
});
