import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'csv-stringify/sync';
import { csvLine, openReport, toCsv, writeReport } from '../../src/actions/kit/report.js';

describe('job reports', () => {
  it('a CSV line has the bytes csv-stringify writes with formula escaping, CRLF records and line breaks quoted', () => {
    const cells: unknown[] = [
      '',
      'plain',
      'x,y',
      'say "hi"',
      '"',
      '=1+2',
      '+7 900',
      '-cmd',
      '@SUM(A1)',
      '\t=1',
      '\r=1',
      '\uFF1D1',
      '\uFF0B1',
      '\uFF0D1',
      '\uFF201',
      'a\nb',
      'a\rb',
      'a\r\n',
      '=HYPERLINK("x")',
      '-',
      "'quoted",
      ' lead',
      'ünï',
      0,
      -5,
      1.5,
      -0.25,
      79001112233,
      10n,
      -10n,
      true,
      false,
      undefined,
      null,
      { a: '=1', b: [1, 'x,y'] },
      ['-x'],
      new Date(0),
    ];
    const cast = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : v);
    const options = {
      escape_formulas: true,
      record_delimiter: 'windows',
      quoted_match: /[\r\n]/,
      cast: { boolean: (b: boolean) => String(b) },
    } as const;
    for (const cell of cells) expect(csvLine([cell]), JSON.stringify(String(cell))).toBe(stringify([[cast(cell)]], options));
    expect(csvLine(cells)).toBe(stringify([cells.map(cast)], options));
  });

  it('writes CSV with fixed columns, quoting and formula neutralising, atomically, and JSON with the summary', async () => {
    expect(
      toCsv(
        [
          { a: 'x,y', b: 'say "hi"' },
          { a: '=HYPERLINK("x")', c: 1 },
        ],
        ['a', 'b', 'c'],
      ),
    ).toBe('a,b,c\r\n"x,y","say ""hi""",\r\n"\'=HYPERLINK(""x"")",,1\r\n');
    expect(toCsv([{ p: '+7 (900) 111-22-33', f: '@SUM(A1)', g: '-cmd(1)' }], ['p', 'f', 'g'])).toBe(
      "p,f,g\r\n'+7 (900) 111-22-33,'@SUM(A1),'-cmd(1)\r\n",
    );
    const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-report-'));
    const file = path.join(dir, 'sub/r.json');
    await writeReport(file, { action: 'a', runId: 'r', generatedAt: 0, summary: { n: 1 }, columns: ['x'], rows: [{ x: 1 }] });
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({
      action: 'a',
      runId: 'r',
      generatedAt: '1970-01-01T00:00:00.000Z',
      summary: { n: 1 },
      rows: [{ x: 1 }],
    });
    expect(await readdir(path.join(dir, 'sub'))).toEqual(['r.json']);
    await expect(
      writeReport(path.join(dir, 'r.txt'), { action: 'a', runId: 'r', generatedAt: 0, summary: {}, columns: [], rows: [] }),
    ).rejects.toThrow(/must end in \.csv or \.json/);
  });

  it('the streaming report holds the rows written so far before it is closed', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-report-'));
    const file = path.join(dir, 'r.csv');
    const w = await openReport({ action: 'a', runId: 'r', path: file, columns: ['k', 'v'] });
    await w.write({ k: 1, v: 'one' });
    await w.write({ k: 2, v: '=two', extra: 'ignored' });
    await new Promise((r) => setTimeout(r, 50));
    // a run killed here keeps what finished
    expect(await readFile(file, 'utf8')).toBe("k,v\r\n1,one\r\n2,'=two\r\n");
    await w.close({});
    const j = await openReport({ action: 'a', runId: 'r', path: path.join(dir, 'r.json'), columns: ['k'] });
    await j.write({ k: 1 });
    await j.close({ n: 1 });
    expect(JSON.parse(await readFile(path.join(dir, 'r.json'), 'utf8'))).toMatchObject({
      columns: ['k'],
      rows: [{ k: 1 }],
      summary: { n: 1 },
    });
  });

  it('a row kept for the journal is written again as the same bytes, and cells kept by older journals too', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-report-'));
    const row = { k: 79001112233, v: '=two, "quoted"', none: undefined };
    const direct = await openReport({ action: 'a', runId: 'r', path: path.join(dir, 'direct.csv'), columns: ['k', 'v', 'none'] });
    await direct.write(row);
    await direct.close({});
    const replayed = await openReport({ action: 'a', runId: 'r', path: path.join(dir, 'replayed.csv'), columns: ['k', 'v', 'none'] });
    // Through the journal's JSON, as a resumed attempt reads it.
    await replayed.writeKept(JSON.parse(JSON.stringify(replayed.keep(row))));
    await replayed.writeKept(JSON.parse(JSON.stringify([79001112233, '=two, "quoted"', undefined])));
    await replayed.close({});
    const line = (await readFile(path.join(dir, 'direct.csv'), 'utf8')).split('\r\n')[1]!;
    expect(line).toBe(`79001112233,"'=two, ""quoted""",`);
    expect(await readFile(path.join(dir, 'replayed.csv'), 'utf8')).toBe(`k,v,none\r\n${line}\r\n${line}\r\n`);

    const json = await openReport({ action: 'a', runId: 'r', path: path.join(dir, 'r.json'), columns: ['k', 'v', 'none'] });
    await json.writeKept(JSON.parse(JSON.stringify(json.keep(row))));
    await expect(json.writeKept('79001112233,x,\r\n')).rejects.toThrow(/journal holds CSV lines/);
    await json.close({});
    expect(JSON.parse(await readFile(path.join(dir, 'r.json'), 'utf8'))).toMatchObject({
      rows: [{ k: 79001112233, v: '=two, "quoted"', none: null }],
    });
  });
});
