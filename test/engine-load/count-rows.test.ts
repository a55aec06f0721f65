import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { countCsvRecords, countRows, readRows } from '../../src/engine/flow/data-file.js';
import { tempProject } from './helpers.js';

const ctxOf = (dir: string) => ({ resolvePath: (p: string) => path.join(dir, p) });

/** What the job's reader yields for a file, or the error it stops with. */
async function readCount(dir: string, file: string): Promise<number | string> {
  let n = 0;
  try {
    for await (const _ of readRows(ctxOf(dir), 'test.job', { file })) n++;
  } catch (e) {
    return (e as Error).message;
  }
  return n;
}

async function counted(dir: string, file: string): Promise<number | string> {
  try {
    return await countRows(ctxOf(dir), 'test.job', { file });
  } catch (e) {
    return (e as Error).message;
  }
}

// Each file: its text, and whether the byte scan counts it itself (true) or leaves it to csv-parse.
const FILES: Array<[string, string, boolean]> = [
  ['plain', 'phone\n79001112233\n79002223344\n', true],
  ['no final line end', 'phone\n79001112233\n79002223344', true],
  ['CRLF and blank lines', 'phone,name\r\n1,a\r\n\r\n2,b\r\n\r\n', true],
  ['BOM', '\uFEFFphone,name\n1, Alice\n\n2,Bob\n', true],
  ['quoted cells with line breaks, commas and doubled quotes', 'a,b\n"x\n\ny",1\n"say ""hi"", ok",2\n3,""\n', true],
  ['header only', 'phone\n', true],
  ['empty', '', true],
  ['a cell of blanks and commas', 'a,b\n1,2\n , \n', true],
  ['a line of blanks', 'a\n1\n   \n2\n', false],
  ['a lone CR', 'a\n1\r2\n', false],
  ['mixed line ends', 'a\r\n1\n2\r\n', false],
  ['a quote inside a cell (csv-parse refuses it)', 'a,b\n1,x"y\n', false],
  ['text after a closing quote', 'a\n"x"y\n', false],
  ['a record with too many cells (refused)', 'a,b\n1,2\n3,4,5\n', false],
  ['an unclosed quote (refused)', 'a\n"x\n', false],
];

describe('countRows of a CSV file', () => {
  it.each(FILES)('%s: counts exactly the rows the reader yields (or fails as it does)', async (_name, text, scanned) => {
    const dir = tempProject({ 'data/f.csv': text });
    const expected = await readCount(dir, 'data/f.csv');
    expect(await counted(dir, 'data/f.csv')).toEqual(expected);
    const byScan = await countCsvRecords(path.join(dir, 'data/f.csv'));
    expect(byScan !== undefined).toBe(scanned);
    if (byScan !== undefined) expect(byScan).toBe(expected);
  });

  it('counts a file read in small chunks: quoted cells, CRLFs and the BOM cut by the chunk boundaries', async () => {
    const rows = Array.from({ length: 300 }, (_, i) => (i % 7 === 0 ? `"multi\r\n""line"" ${i}",${i}` : `7920${i},${i}`));
    const dir = tempProject({ 'data/big.csv': `\uFEFF\r\nphone,n\r\n${rows.join('\r\n')}\r\n` });
    expect(await readCount(dir, 'data/big.csv')).toBe(300);
    for (const chunk of [2, 7, 64]) expect(await countCsvRecords(path.join(dir, 'data/big.csv'), chunk)).toBe(300);
  });
});
