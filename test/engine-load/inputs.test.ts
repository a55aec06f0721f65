import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FlowError } from '../../src/api/errors.js';
import { loadFlowFile } from '../../src/engine/flow/load.js';
import { fileOverridesFrom, resolveInputs } from '../../src/engine/flow/inputs.js';
import { readDataFile, streamRecords } from '../../src/engine/flow/data-file.js';
import { builtinRegistry, tempProject } from './helpers.js';

const FLOW = `name: inputs
inputs:
  leads: { file: data/leads.csv }
  extra: { file: data/extra.json }
  conf: { file: data/conf.yaml }
  lines: { file: data/lines.jsonl }
  limit: { type: number, default: 10 }
  dry: { type: boolean, value: false }
  tags: { type: array, default: [a] }
  who: { type: string, required: true }
  opt: { description: no value at all }
steps:
  - { id: a, uses: log, with: { message: "\${{ length(inputs.leads) }}" } }
`;

function project() {
  const dir = tempProject({
    'flows/f.yaml': FLOW,
    'data/leads.csv': '\uFEFFphone,name\n79001112233, Alice\n\n79002223344,Bob\n',
    'data/extra.json': '{"a": [1, 2]}',
    'data/conf.yaml': 'k: v\nlist: [1, 2]\n',
    'data/lines.jsonl': '{"n":1}\n\n{"n":2}\n',
    'other.csv': 'phone\n1\n',
  });
  const flow = loadFlowFile(path.join(dir, 'flows/f.yaml'), { registry: builtinRegistry(), baseDir: dir });
  return { dir, flow };
}

describe('resolveInputs', () => {
  it("a streamed input holds its file's path as the project names it (another file from the command line too), never its rows; a missing file is an error naming the input", async () => {
    const dir = tempProject({
      'flows/s.yaml': `name: s
inputs:
  leads: { file: data/leads.csv, stream: true }
steps:
  - { id: a, uses: log, with: { message: "\${{ inputs.leads }}" } }
`,
      'data/leads.csv': 'phone\n79001112233\n',
      'lists/more.csv': 'phone\n79002223344\n',
    });
    const flow = loadFlowFile(path.join(dir, 'flows/s.yaml'), { registry: builtinRegistry(), baseDir: dir });
    expect(await resolveInputs(flow)).toEqual({ leads: 'data/leads.csv' });
    expect(await resolveInputs(flow, fileOverridesFrom(flow, { leads: 'lists/more.csv' }, dir))).toEqual({ leads: 'lists/more.csv' });
    const outside = tempProject({ 'x.csv': 'phone\n1\n' });
    expect(await resolveInputs(flow, { leads: path.join(outside, 'x.csv') })).toEqual({ leads: path.join(outside, 'x.csv') });
    await expect(resolveInputs(flow, { leads: path.join(dir, 'data/missing.csv') })).rejects.toThrow(
      /inputs\.leads: .*missing\.csv: data file not found/,
    );
  });

  it('reads CSV, JSON, YAML and JSON Lines files relative to the project, and inline values and defaults', async () => {
    const { flow } = project();
    const inputs = await resolveInputs(flow, { who: 'me' });
    expect(inputs).toEqual({
      leads: [
        { phone: '79001112233', name: 'Alice' },
        { phone: '79002223344', name: 'Bob' },
      ],
      extra: { a: [1, 2] },
      conf: { k: 'v', list: [1, 2] },
      lines: [{ n: 1 }, { n: 2 }],
      limit: 10,
      dry: false,
      tags: ['a'],
      who: 'me',
      opt: undefined,
    });
  });

  it('coerces --input values by type; a file input takes another file', async () => {
    const { dir, flow } = project();
    // The command line makes a file override absolute against its working directory.
    const leads = fileOverridesFrom(flow, { who: 'x', leads: 'other.csv' }, dir);
    expect(leads).toEqual({ leads: path.join(dir, 'other.csv') });
    const inputs = await resolveInputs(flow, { who: 'x', limit: '25', dry: 'yes', tags: 'a, b', ...leads });
    expect(inputs).toMatchObject({ limit: 25, dry: true, tags: ['a', 'b'], leads: [{ phone: '1' }] });
    expect((await resolveInputs(flow, { who: 'x', tags: '["q"]' })).tags).toEqual(['q']);
  });

  it('names the input in every error', async () => {
    const { flow } = project();
    await expect(resolveInputs(flow, {})).rejects.toThrow(/inputs\.who: required input 'who' has no value: pass --input who=\.\.\./);
    await expect(resolveInputs(flow, { who: 'x', limt: '1' })).rejects.toThrow(
      /inputs\.limt: flow 'inputs' has no input 'limt' \(did you mean 'limit'\?\)/,
    );
    await expect(resolveInputs(flow, { who: 'x', limit: 'ten' })).rejects.toThrow(
      /inputs\.limit: --input limit=ten: 'ten' is not a number/,
    );
    await expect(resolveInputs(flow, { who: 'x', dry: 'maybe' })).rejects.toThrow(/'maybe' is not a boolean/);
    await expect(resolveInputs(flow, { who: 'x', leads: '/nonexistent/x.csv' })).rejects.toThrow(FlowError);
    await expect(resolveInputs(flow, { who: 'x', leads: '/nonexistent/x.csv' })).rejects.toThrow(
      /inputs\.leads: .*x\.csv: data file not found/,
    );
  });
});

describe('readDataFile', () => {
  it('refuses unknown types, bad content and oversized files', async () => {
    const dir = tempProject({ 'a.txt': 'x', 'b.json': '{', 'c.csv': 'a,b\n1\n', 'd.yaml': 'a: [', 'e.json': '[1,2,3]' });
    await expect(readDataFile(path.join(dir, 'a.txt'))).rejects.toThrow(/unsupported data file type '\.txt'/);
    await expect(readDataFile(path.join(dir, 'b.json'))).rejects.toThrow(/bad JSON/);
    await expect(readDataFile(path.join(dir, 'c.csv'))).rejects.toThrow(/bad CSV/);
    await expect(readDataFile(path.join(dir, 'd.yaml'))).rejects.toThrow(/d\.yaml:1:/);
    await expect(readDataFile(path.join(dir, 'e.json'), { maxBytes: 3 })).rejects.toThrow(/7 bytes is more than the 3 bytes/);
  });
});

describe('streamRecords', () => {
  it('a bad last CSV record found while the reader works on an earlier row fails the next read, naming its line', async () => {
    const dir = tempProject({ 'late.csv': 'phone,name\n79001112233,Ann\n79002223344,Bob\nx\n' });
    const rows = streamRecords(path.join(dir, 'late.csv'), 'data/late.csv');
    expect((await rows.next()).value).toMatchObject({ where: 'data/late.csv:2' });
    // The parser reaches the end of the file (and the bad record) meanwhile.
    await new Promise((r) => setTimeout(r, 50));
    await expect(rows.next()).resolves.toMatchObject({ value: { where: 'data/late.csv:3' } });
    await expect(rows.next()).rejects.toThrow(/data\/late\.csv:4: bad CSV/);
  });

  it('each CSV row names the line it starts on, past blank lines and cells that span lines', async () => {
    const dir = tempProject({ 'lines.csv': 'phone,name\n\n1,"a\nb"\n\n\n2,c\n\n3,"x\n\ny"\n4,d\n\n5,e' });
    const got: string[] = [];
    for await (const r of streamRecords(path.join(dir, 'lines.csv'), 'lines.csv'))
      got.push(`${r.where} ${(r.value as { phone: string }).phone}`);
    expect(got).toEqual(['lines.csv:3 1', 'lines.csv:7 2', 'lines.csv:9 3', 'lines.csv:12 4', 'lines.csv:14 5']);
  });

  it('a reader that stops early leaves no parser error behind', async () => {
    const dir = tempProject({ 'early.csv': 'phone,name\n79001112233,Ann\nx\n' });
    for await (const r of streamRecords(path.join(dir, 'early.csv'), 'data/early.csv')) {
      expect(r.where).toBe('data/early.csv:2');
      await new Promise((res) => setTimeout(res, 50));
      break;
    }
    await new Promise((res) => setTimeout(res, 50));
  });
});
