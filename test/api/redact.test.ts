import { describe, expect, it } from 'vitest';
import { redact, redactedPath } from '../../src/api/redact.js';

describe('redact', () => {
  const secrets = { idInstance: '1101000001', apiTokenInstance: 'd4f1c0ffee-token' };

  it('writes the token and the id as placeholders, everywhere they occur', () => {
    const text = 'POST http://h/waInstance1101000001/getMessage/d4f1c0ffee-token failed; id 1101000001, token d4f1c0ffee-token';
    expect(redact(text, secrets)).toBe(
      'POST http://h/waInstance<INSTANCE_ID>/getMessage/<API_TOKEN> failed; id <INSTANCE_ID>, token <API_TOKEN>',
    );
  });

  it('also catches the URL-encoded token', () => {
    expect(redact('t=a%2Bsecret%2Fx', { apiTokenInstance: 'a+secret/x' })).toBe('t=<API_TOKEN>');
  });

  it('replaces the id only as a whole number, so other numbers stay readable', () => {
    expect(redact('ts 11010000012, id 1101000001', secrets)).toBe('ts 11010000012, id <INSTANCE_ID>');
  });

  it('ignores values too short to be secrets instead of garbling every digit', () => {
    expect(redact('http://127.0.0.1:7070, 0 failed', { idInstance: '0', apiTokenInstance: '7' })).toBe('http://127.0.0.1:7070, 0 failed');
  });

  it('builds a redacted path', () => {
    expect(redactedPath('checkAccount')).toBe('/waInstance<INSTANCE_ID>/checkAccount/<API_TOKEN>');
  });
});
