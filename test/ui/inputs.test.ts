/**
 * Inputs that JSON or JavaScript would silently change are refused with an
 * error naming the input, over the API and on the command line: a name that
 * is an object internal (`__proto__`, dropped before), a number too large to
 * store (`1e999`, stored as null before), a JSON value nested too deep.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { waitFor } from '../support/wait.js';
import { startProject, type Project } from './helpers.js';

const TYPED = `name: typed
inputs:
  limit: { type: number, default: 1 }
  tags: { type: array, default: [] }
  note: { type: string, default: "" }
steps:
  - id: say
    uses: log
    with: { message: "\${{ inputs.limit }}" }
`;

let p: Project;
beforeAll(async () => {
  p = await startProject();
  writeFileSync(path.join(p.dir, 'flows', 'typed.yaml'), TYPED);
});
afterAll(() => p.close());

/** POSTs JSON text as written (JSON.stringify could write neither `__proto__` as a key nor 1e999). */
async function startWith(inputsJson: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${p.url}/api/flows/typed/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: `{"inputs":${inputsJson}}`,
  });
  return { status: res.status, body: await res.json() };
}

describe('inputs JSON or JavaScript would change', () => {
  it('the API refuses an input named __proto__, naming it', async () => {
    const r = await startWith('{"__proto__":5}');
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'UI_BAD_REQUEST', field: 'inputs.__proto__' });
    expect(r.body.error.message).toBe("inputs.__proto__: '__proto__' cannot be an input name: it names JavaScript object internals");
  });

  it('the API refuses a number too large to store, as a value, inside an array, or as text', async () => {
    for (const [json, field] of [
      ['{"limit":1e999}', 'inputs.limit'],
      ['{"tags":[1,-1e999]}', 'inputs.tags'],
      ['{"limit":"1e999"}', 'inputs.limit'],
      ['{"tags":"[2e400]"}', 'inputs.tags'],
    ] as const) {
      const r = await startWith(json);
      expect(r.status, json).toBe(400);
      expect(r.body.error.field, json).toBe(field);
      expect(r.body.error.message, json).toMatch(/too large to store/);
    }
    // A string input takes the text as it is.
    const note = await startWith('{"note":"1e999"}');
    expect(note.status).toBe(201);
    await waitFor('the run to end', async () => (await p.runtime.engine.getRun(note.body.runId))?.status === 'succeeded');
  });

  it('the API refuses a JSON input given as text nested 5,000 deep, naming the input and the limit', async () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const r = await startWith(JSON.stringify({ tags: deep }));
    expect(r.status).toBe(400);
    expect(r.body.error.field).toBe('inputs.tags');
    expect(r.body.error.message).toMatch(/nested more than 64 levels deep/);
  });

  it('the command line refuses -i __proto__=… and -i limit=1e999 (exit 2), naming the input', async () => {
    const proto = await cli(['run', 'typed', '--no-daemon', '-i', '__proto__=1'], p.dir);
    expect(proto.code).toBe(2);
    expect(proto.stderr).toMatch(/inputs\.__proto__: '__proto__' cannot be an input name/);
    const big = await cli(['run', 'typed', '--no-daemon', '-i', 'limit=1e999'], p.dir);
    expect(big.code).toBe(2);
    expect(big.stderr).toMatch(/inputs\.limit: --input limit=1e999: '1e999' is too large to store as a number/);
  });
});
