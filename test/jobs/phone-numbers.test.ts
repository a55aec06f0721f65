/** The phone number and username rules of docs/jobs.md "Phone numbers", one test per rule. */
import { describe, expect, it } from 'vitest';
import { normalisePhone, normaliseUsername } from '../../src/actions/phone.js';

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
