import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { normalisePhone, normaliseUsername } from '../../src/actions/phone.js';
import { parseDuration, formatDuration } from '../../src/util/duration.js';
import { FailureGuard } from '../../src/actions/kit/guard.js';
import { JobCounters } from '../../src/actions/kit/counters.js';
import { openReport, toCsv, writeReport } from '../../src/actions/kit/report.js';
import { ApiError, NetworkError } from '../../src/api/errors.js';
import { nextOpening, resolveWindow } from '../../src/actions/window.js';
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

  // One test per rule of docs/jobs.md "Phone numbers".
  it('rule: spaces, +, dashes, brackets and dots are removed', () => {
    expect(normalisePhone('+7 (900) 111-22-33')).toEqual({ ok: true, phone: 79001112233, digits: '79001112233' });
    expect(normalisePhone('7.900.111.22.33')).toMatchObject({ digits: '79001112233' });
  });

  it('rule: any other character makes the number invalid', () => {
    expect(normalisePhone('7900111223x')).toMatchObject({ ok: false, reason: expect.stringMatching(/characters other than digits/) });
  });

  it('rule: the result must be 7 to 15 digits', () => {
    expect(normalisePhone('123456').ok).toBe(false);
    expect(normalisePhone('1234567').ok).toBe(true);
    expect(normalisePhone('123456789012345').ok).toBe(true);
    expect(normalisePhone('1234567890123456')).toMatchObject({ ok: false, reason: expect.stringMatching(/16 digits; .* 7 to 15/) });
  });

  it('rule: a number starting with 0 (an international or trunk prefix) is invalid, not guessed', () => {
    for (const raw of ['0079001112233', '030 1234567']) {
      expect(normalisePhone(raw)).toMatchObject({ ok: false, reason: expect.stringMatching(/starts with 0/) });
    }
  });

  it('rule: a number whose first group is a lone 8 (the trunk prefix of a domestic number) is invalid, not guessed', () => {
    for (const raw of ['8 800 555 35 35', '8 (900) 111-22-33', '8-900-111-22-33', '+8 800 555 35 35', '8(800)5553535']) {
      const r = normalisePhone(raw);
      expect(r, raw).toMatchObject({ ok: false, reason: expect.stringMatching(/trunk prefix 8.*country code/) });
    }
  });

  it('rule: digits written together are read as an international number, country code first', () => {
    // 880 is a country code: without a separated 8 nothing says this was dialled at home.
    expect(normalisePhone('88005553535')).toMatchObject({ ok: true, digits: '88005553535' });
    // 84 (Viet Nam) and 82 (Korea) numbers are written the same way.
    expect(normalisePhone('84912345678')).toMatchObject({ ok: true, digits: '84912345678' });
    expect(normalisePhone('+82 2 1234 5678')).toMatchObject({ ok: true, digits: '82212345678' });
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

  it('#8.11 the next opening of a window: inside it now, before it its start, after a daily one tomorrow, after an absolute one never', () => {
    const w = { start: '09:00', stop: '17:00', timezone: 'UTC' };
    expect(nextOpening(w, Date.parse('2026-01-05T12:00:00Z'))?.at).toBe(Date.parse('2026-01-05T12:00:00Z'));
    expect(nextOpening(w, Date.parse('2026-01-05T07:00:00Z'))?.at).toBe(Date.parse('2026-01-05T09:00:00Z'));
    expect(nextOpening(w, Date.parse('2026-01-05T18:00:00Z'))?.at).toBe(Date.parse('2026-01-06T09:00:00Z'));
    expect(nextOpening({ stop: '17:00', timezone: 'UTC' }, Date.parse('2026-01-05T18:00:00Z'))?.at).toBe(
      Date.parse('2026-01-06T00:00:00Z'),
    );
    expect(
      nextOpening({ start: '2026-01-01T09:00:00Z', stop: '2026-01-01T17:00:00Z' }, Date.parse('2026-01-05T12:00:00Z')),
    ).toBeUndefined();
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

  it('#10 the streaming report holds the rows written so far before it is closed', async () => {
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
});

describe('job kit: counters and the failure guard', () => {
  it('counters report every `every` changes and on flush', () => {
    const seen: unknown[] = [];
    const c = new JobCounters({ progress: (u) => void seen.push(u) }, 2);
    c.total = 3;
    c.add('done');
    expect(seen).toHaveLength(0);
    c.add('invalid');
    c.add('skipped');
    c.flush();
    expect(seen).toEqual([
      { done: 1, total: 3, failed: 0, invalid: 1, duplicate: 0, skipped: 0, waiting: 0 },
      { done: 1, total: 3, failed: 0, invalid: 1, duplicate: 0, skipped: 1, waiting: 0 },
    ]);
  });

  it('#8.2 fatal stops at once, retryable after max in a row, definite never', () => {
    const g = new FailureGuard('job', 'default', 2);
    const e404 = new ApiError('addContact', 404, 'x is not on the messenger', { code: 'NOT_ON_MESSENGER' });
    const net = new NetworkError('addContact', 'ECONNRESET', true);
    expect(g.fail(e404, '')).toBe('definite');
    expect(g.fail(net, '')).toBe('retryable');
    g.ok();
    expect(g.fail(net, '')).toBe('retryable');
    expect(() => g.fail(net, 'kept')).toThrow(/2 calls in a row failed .* kept/);
    const e401 = new ApiError('addContact', 401, 'Unauthorized', { code: 'UNAUTHORIZED' });
    expect(() => new FailureGuard('job', 'default', 5).fail(e401, '')).toThrow(
      /job stopped: the service refused the token of instance 'default'/,
    );
  });
});
