import { describe, expect, it } from 'vitest';
import { validateRequest } from '../../src/api/validate.js';
import { ValidationError } from '../../src/api/errors.js';
import { API_METHODS, METHOD_SPECS } from '../../src/api/methods.js';

const chat = '79001112233@c.us';

function details(method: Parameters<typeof validateRequest>[0], body: unknown): { message: string; field?: string; code: string } {
  try {
    validateRequest(method, body);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    const v = e as ValidationError;
    return { message: v.message, field: v.field, code: v.code };
  }
  throw new Error('expected a ValidationError');
}

describe('validateRequest: the spec Errors table, to the letter', () => {
  it.each([
    ['getChatHistory', { chatId: chat, count: '5' }, "Validation failed. Details: 'count' must be a number", 'count'],
    [
      'getChatHistory',
      { chatId: chat, count: Number.MAX_SAFE_INTEGER + 2 },
      "Validation failed. Details: 'count' must be a number",
      'count',
    ],
    ['getMessage', { chatId: chat, idMessage: '' }, "Validation failed. Details: 'idMessage' is not allowed to be empty", 'idMessage'],
    [
      'getMessage',
      { chatId: chat, idMessage: 'ABCDEF' },
      "Validation failed. Details: 'message id' must be at least 16 symbols",
      'idMessage',
    ],
    [
      'sendFileByUrl',
      { chatId: chat, urlFile: 'ftp://x.io/a.png', fileName: 'a.png' },
      'Validation failed. Details: url has incorrect format. It should start with http(s)://',
      'urlFile',
    ],
    [
      'checkAccount',
      { phoneNumber: '7900-111' },
      "Validation failed. Details: Wrong format. 'phoneNumber' must contain only digits",
      'phoneNumber',
    ],
  ] as const)('%s %j', (method, body, message, field) => {
    const d = details(method, body);
    expect(d.message).toBe(message);
    expect(d.field).toBe(field);
    expect(d.code).toBe('VALIDATION_FAILED');
  });
});

describe('validateRequest: rules stated elsewhere in the spec', () => {
  it('applies defaults: count 100, minutes 1440, saveInAddressbook true, force false', () => {
    expect(validateRequest('getChatHistory', { chatId: chat })).toEqual({ chatId: chat, count: 100 });
    expect(validateRequest('lastOutgoingMessages', undefined)).toEqual({ minutes: 1440 });
    expect(validateRequest('addContact', { chatId: chat, firstName: 'A' })).toMatchObject({ saveInAddressbook: true });
    expect(validateRequest('checkAccount', { phoneNumber: 79001112233 })).toEqual({ phoneNumber: 79001112233, force: false });
  });

  it('requires a well-formed chatId, personal for contacts', () => {
    expect(details('getChatHistory', {}).message).toBe("Validation failed. Details: 'chatId' is required");
    expect(details('getChatHistory', { chatId: 'bob' }).field).toBe('chatId');
    expect(details('addContact', { chatId: '120363043968066561@g.us', firstName: 'A' }).message).toMatch(/personal chat ID/);
    expect(validateRequest('getChatHistory', { chatId: '120363043968066561@g.us' }).chatId).toBe('120363043968066561@g.us');
    expect(validateRequest('getChatHistory', { chatId: '-100123456' }).chatId).toBe('-100123456');
  });

  it('requires firstName, and fileName', () => {
    expect(details('addContact', { chatId: chat }).message).toBe("Validation failed. Details: 'firstName' is required");
    expect(details('editContact', { chatId: chat, firstName: '' }).message).toBe(
      "Validation failed. Details: 'firstName' is not allowed to be empty",
    );
    expect(details('sendFileByUrl', { chatId: chat, urlFile: 'https://x.io/a' }).field).toBe('fileName');
  });

  it('checkAccount needs exactly one of phoneNumber/username; username starts with @', () => {
    expect(details('checkAccount', {}).code).toBe('CHECK_ACCOUNT_TARGET');
    expect(details('checkAccount', { phoneNumber: 1, username: '@a' }).code).toBe('CHECK_ACCOUNT_TARGET');
    expect(details('checkAccount', { username: 'alice' }).field).toBe('username');
    expect(validateRequest('checkAccount', { username: '@alice' })).toEqual({ username: '@alice', force: false });
    expect(validateRequest('checkAccount', { phoneNumber: '79001112233' }).phoneNumber).toBe(79001112233);
    expect(details('checkAccount', { phoneNumber: 1.5 }).field).toBe('phoneNumber');
    expect(details('checkAccount', { phoneNumber: 7.9e30 }).message).toBe(
      "Validation failed. Details: 'phoneNumber' must have at most 15 digits (international format)",
    );
    expect(details('checkAccount', { phoneNumber: '7900111223312345678' }).field).toBe('phoneNumber');
  });

  it('caption at most 1024, typingTime 1000..20000, typingType listed', () => {
    const base = { chatId: chat, urlFile: 'https://x.io/a.png', fileName: 'a.png' };
    expect(validateRequest('sendFileByUrl', { ...base, caption: 'x'.repeat(1024) }).caption).toHaveLength(1024);
    expect(details('sendFileByUrl', { ...base, caption: 'x'.repeat(1025) }).field).toBe('caption');
    expect(details('sendFileByUrl', { ...base, typingTime: 999 }).message).toBe(
      "Validation failed. Details: 'typingTime' must be greater than or equal to 1000",
    );
    expect(details('sendFileByUrl', { ...base, typingTime: 20001 }).message).toBe(
      "Validation failed. Details: 'typingTime' must be less than or equal to 20000",
    );
    expect(details('sendFileByUrl', { ...base, typingType: 'dance' }).field).toBe('typingType');
    expect(validateRequest('sendFileByUrl', { ...base, typingTime: 1000, typingType: 'upload_document' }).typingType).toBe(
      'upload_document',
    );
  });

  it('count and minutes: positive integers within the safe range', () => {
    expect(details('getChatHistory', { chatId: chat, count: 0 }).message).toBe(
      "Validation failed. Details: 'count' must be greater than or equal to 1",
    );
    expect(details('getChatHistory', { chatId: chat, count: 2.5 }).message).toBe("Validation failed. Details: 'count' must be an integer");
    expect(details('lastOutgoingMessages', { minutes: -5 }).field).toBe('minutes');
    expect(details('lastOutgoingMessages', { minutes: 1e300 }).message).toBe("Validation failed. Details: 'minutes' must be a number");
  });

  it('refuses NUL bytes and non-object bodies', () => {
    expect(details('getChatHistory', { chatId: '7900\u0000@c.us' }).message).toMatch(/NUL/);
    expect(details('getMessage', [1, 2]).message).toBe('Validation failed. Details: request body must be a JSON object');
    expect(details('getMessage', null).message).toBe('Validation failed. Details: request body must be a JSON object');
  });

  it('strict mode (flow `with:`) names an unknown key', () => {
    expect(() => validateRequest('getChatHistory', { chatId: chat, chatID: 'x' }, { strict: true })).toThrow(/'chatID' is not allowed/);
    expect(validateRequest('getChatHistory', { chatId: chat, extra: 1 })).toEqual({ chatId: chat, count: 100 });
  });

  it('every method has a spec entry', () => {
    for (const m of API_METHODS) expect(METHOD_SPECS[m].name).toBe(m);
    expect(METHOD_SPECS.lastOutgoingMessages.httpMethod).toBe('GET');
    expect(METHOD_SPECS.sendFileByUrl.idempotent).toBe(false);
    expect(METHOD_SPECS.addContact.idempotent).toBe(false);
  });
});
