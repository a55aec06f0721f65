import { describe, expect, it } from 'vitest';
import { formatError } from '../../src/api/error-codes.js';
import { MsgflowError } from '../../src/api/errors.js';

describe('formatError', () => {
  it('fills every parameter of the template, each occurrence', () => {
    expect(formatError('CONTACT_EXISTS', { chatId: '79001112233@c.us' })).toContain('79001112233@c.us');
    expect(formatError('API_ERROR', { method: 'addContact', status: 466, message: 'no {way}' })).toBe(
      'addContact failed with HTTP 466: no {way}',
    );
  });

  it('leaves a missing or undefined parameter visible as {name}', () => {
    expect(formatError('API_ERROR', { method: 'addContact', status: undefined })).toBe('addContact failed with HTTP {status}: {message}');
  });

  it('gives the same text the second time a code is formatted', () => {
    const a = formatError('PAYLOAD_TOO_LARGE', { limit: 10 });
    expect(formatError('PAYLOAD_TOO_LARGE', { limit: 10 })).toBe(a);
    expect(formatError('PAYLOAD_TOO_LARGE', { limit: 20 })).not.toBe(a);
  });
});

describe('MsgflowError.answer', () => {
  it('has the code, message, params and status the constructor gives', () => {
    const params = { chatId: '79001112233@c.us', messenger: 'WhatsApp' };
    const made = new MsgflowError('NOT_ON_MESSENGER', params);
    const answer = MsgflowError.answer('NOT_ON_MESSENGER', params);
    expect(answer).toBeInstanceOf(MsgflowError);
    expect([answer.code, answer.message, answer.status, answer.params]).toEqual([made.code, made.message, made.status, made.params]);
  });

  it('leaves the stack trace limit of the process as it found it', () => {
    const before = Error.stackTraceLimit;
    MsgflowError.answer('CONTACT_EXISTS', { chatId: '1@c.us' });
    expect(Error.stackTraceLimit).toBe(before);
    expect(new Error('after').stack).toContain('errors.test');
  });
});
