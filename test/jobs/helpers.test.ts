import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { normalisePhone, normaliseUsername } from '../../src/actions/phone.js';
import { parseDuration, formatDuration } from '../../src/actions/duration.js';
import { toCsv, writeReport } from '../../src/actions/report.js';
import { resolveWindow } from '../../src/actions/window.js';
import { paceDelay } from '../../src/actions/pace.js';

describe('phone numbers', () => {
  it.each([
    ['+7 (900) 111-22-33', 79001112233],
    ['7900.111.22.33', 79001112233],
    [79001112233, 79001112233],
    ['+49 30-1234 567', 49301234567],
  ])('%s → %s', (raw, phone) => expect(normalisePhone(raw)).toMatchObject({ ok: true, phone }));

  it.each([
    ['12-34', /7 to 15/],
    ['+44 20 7946 abc', /characters other than digits/],
    ['0079001112233', /starts with 0/],
    ['', /empty/],
    [null, /got null/],
    ['1234567890123456', /16 digits/],
  ])('%s is invalid', (raw, reason) => {
    const r = normalisePhone(raw);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(reason);
  });

  it('usernames get an @ and a case-insensitive key', () => {
    expect(normaliseUsername('Alice')).toEqual({ ok: true, username: '@Alice', key: '@alice' });
    expect(normaliseUsername('@no spaces').ok).toBe(false);
  });
});

describe('durations, pacing, windows, reports', () => {
  it('parses and formats durations', () => {
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('250')).toBe(250);
    expect(parseDuration('2 hours')).toBeUndefined();
    expect(formatDuration(7_200_000)).toBe('2h');
  });

  it('jitters the pace within ± jitter', () => {
    expect(paceDelay({ delay: 1000, jitter: 0.3 }, () => 0)).toBe(700);
    expect(paceDelay({ delay: 1000, jitter: 0.3 }, () => 1)).toBe(1300);
    expect(paceDelay({ delay: 1000, jitter: 0 }, Math.random)).toBe(1000);
  });

  it('resolves daily windows in a zone, across DST and overnight', () => {
    const summer = resolveWindow({ start: '09:00', stop: '18:00', timezone: 'Europe/Berlin' }, Date.parse('2026-07-01T12:00:00Z'));
    expect(summer.startAt).toBe(Date.parse('2026-07-01T07:00:00Z'));
    const winter = resolveWindow({ start: '09:00', stop: '18:00', timezone: 'Europe/Berlin' }, Date.parse('2026-01-15T12:00:00Z'));
    expect(winter.stopAt).toBe(Date.parse('2026-01-15T17:00:00Z'));
    const night = resolveWindow({ start: '22:00', stop: '06:00', timezone: 'UTC' }, Date.parse('2026-01-15T03:00:00Z'));
    expect(night).toEqual({ startAt: Date.parse('2026-01-14T22:00:00Z'), stopAt: Date.parse('2026-01-15T06:00:00Z') });
    expect(resolveWindow({ start: '2026-02-01T10:00:00Z' }, 0)).toEqual({ startAt: Date.parse('2026-02-01T10:00:00Z'), stopAt: undefined });
  });

  it('writes CSV with quoting and formula neutralising, atomically, and JSON with the summary', async () => {
    expect(toCsv([{ a: 'x,y', b: 'say "hi"' }, { a: '=HYPERLINK("x")', c: 1 }])).toBe('a,b,c\r\n"x,y","say ""hi""",\r\n"\'=HYPERLINK(""x"")",,1\r\n');
    expect(toCsv([{ p: '+7 (900) 111-22-33', f: '@SUM(A1)', g: '-cmd(1)' }])).toBe("p,f,g\r\n+7 (900) 111-22-33,'@SUM(A1),'-cmd(1)\r\n");
    const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-report-'));
    const file = path.join(dir, 'sub/r.json');
    await writeReport(file, { action: 'a', runId: 'r', generatedAt: 0, summary: { n: 1 }, rows: [{ x: 1 }] });
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ action: 'a', runId: 'r', generatedAt: '1970-01-01T00:00:00.000Z', summary: { n: 1 }, rows: [{ x: 1 }] });
    expect(await readdir(path.join(dir, 'sub'))).toEqual(['r.json']);
    await expect(writeReport(path.join(dir, 'r.txt'), { action: 'a', runId: 'r', generatedAt: 0, summary: {}, rows: [] })).rejects.toThrow(/must end in \.csv or \.json/);
  });
});
