import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MsgflowError, ValidationError } from '../../src/api/errors.js';
import { CLIENT_DEFAULTS, parseClientOptions } from '../../src/client/options.js';
import { createClient, type MsgflowClient } from '../../src/client/client.js';
import { ManualClock } from '../../src/util/clock.js';
import { GROUP, ID, PERSONAL, TOKEN } from './helpers/fixtures.js';
import { startScriptServer, type ScriptServer } from './helpers/script-server.js';

let server: ScriptServer;
let client: MsgflowClient;
beforeAll(async () => {
  server = await startScriptServer();
  server.fallback = { json: { message: 'should not be reached' } };
  client = createClient({ apiUrl: server.url, idInstance: ID, apiTokenInstance: TOKEN });
});
afterAll(async () => {
  await client.close();
  await server.close();
});

const call = (method: string, body: unknown) => (client as unknown as Record<string, (b: unknown) => Promise<unknown>>)[method]!(body);

describe('requests are validated before anything leaves', () => {
  // [method, body, exact message, field]
  const cases: Array<[string, unknown, string, string | undefined]> = [
    ['getChatHistory', { chatId: PERSONAL, count: '5' }, "Validation failed. Details: 'count' must be a number", 'count'],
    ['getChatHistory', { chatId: PERSONAL, count: 2 ** 60 }, "Validation failed. Details: 'count' must be a number", 'count'],
    ['getChatHistory', { chatID: PERSONAL }, "Validation failed. Details: 'chatId' is required", 'chatId'],
    ['getChatHistory', { chatId: PERSONAL, extra: 1 }, "Validation failed. Details: 'extra' is not allowed", 'extra'],
    ['getMessage', { chatId: PERSONAL, idMessage: '' }, "Validation failed. Details: 'idMessage' is not allowed to be empty", 'idMessage'],
    [
      'getMessage',
      { chatId: PERSONAL, idMessage: 'short' },
      "Validation failed. Details: 'message id' must be at least 16 symbols",
      'idMessage',
    ],
    [
      'sendFileByUrl',
      { chatId: PERSONAL, urlFile: 'ftp://files.example.com/a.pdf', fileName: 'a.pdf' },
      'Validation failed. Details: url has incorrect format. It should start with http(s)://',
      'urlFile',
    ],
    [
      'checkAccount',
      { phoneNumber: '7900abc' },
      "Validation failed. Details: Wrong format. 'phoneNumber' must contain only digits",
      'phoneNumber',
    ],
    ['checkAccount', {}, 'request should contain phoneNumber or username: exactly one of them', 'phoneNumber'],
    [
      'checkAccount',
      { phoneNumber: 79001112233, username: '@ann' },
      'request should contain phoneNumber or username: exactly one of them',
      'username',
    ],
    ['addContact', { chatId: PERSONAL }, "Validation failed. Details: 'firstName' is required", 'firstName'],
    [
      'deleteContact',
      { chatId: GROUP },
      "Validation failed. Details: 'chatId' must be a personal chat ID: the phone number in international digits followed by @c.us",
      'chatId',
    ],
    ['lastOutgoingMessages', { minutes: 0 }, "Validation failed. Details: 'minutes' must be greater than or equal to 1", 'minutes'],
    ['editContact', null, 'Validation failed. Details: request body must be a JSON object', undefined],
  ];

  it.each(cases)('%s %j', async (method, body, text, field) => {
    const before = server.requests.length;
    const err = await call(method, body).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toBe(text);
    expect((err as ValidationError).field).toBe(field);
    expect(server.requests.length).toBe(before);
  });

  it('the server saw no request at all', () => {
    expect(server.requests).toHaveLength(0);
  });

  it('a call with a wrong body takes no rate-limit slot', async () => {
    const clock = new ManualClock(0);
    const c = createClient({ apiUrl: server.url, idInstance: ID, apiTokenInstance: TOKEN, clock });
    for (let i = 0; i < 3; i++) await expect(c.getChatHistory({ chatId: '' })).rejects.toBeInstanceOf(ValidationError);
    expect(clock.pending).toBe(0);
    await c.close();
  });
});

describe('createClient options', () => {
  const base = { apiUrl: 'http://127.0.0.1:1', idInstance: ID, apiTokenInstance: TOKEN };

  it('applies every default and freezes the result', () => {
    const o = parseClientOptions(base);
    expect(o).toMatchObject({
      timeoutMs: CLIENT_DEFAULTS.timeoutMs,
      retries: 3,
      retryBaseDelayMs: 500,
      retryMaxDelayMs: 30_000,
      retryJitter: 'full',
      rateLimit: true,
      userAgent: 'msgflow',
    });
    expect(o.rateLimits.getChatHistory).toBe(1);
    expect(o.rateLimits.sendFileByUrl).toBe(50);
    expect(Object.isFrozen(o)).toBe(true);
    expect(Object.isFrozen(o.rateLimits)).toBe(true);
  });

  it('merges per-method rate limits over the published ones', () => {
    const o = parseClientOptions({ ...base, rateLimits: { getChatHistory: 5, checkAccount: 0 } });
    expect(o.rateLimits).toMatchObject({ getChatHistory: 5, checkAccount: 0, getMessage: 10 });
  });

  const bad: Array<[string, Record<string, unknown>, string, string]> = [
    ['unknown key', { ...base, retry: 2 }, 'retry', 'invalid client options: retry: unknown option'],
    [
      'unknown method in rateLimits',
      { ...base, rateLimits: { getChat: 1 } },
      'rateLimits.getChat',
      'invalid client options: rateLimits.getChat: unknown option',
    ],
    ['negative rate', { ...base, rateLimits: { getMessage: -1 } }, 'rateLimits.getMessage', 'expected requests/second (0 = unlimited)'],
    ['missing apiUrl', { idInstance: ID, apiTokenInstance: TOKEN }, 'apiUrl', 'apiUrl: required (or pass a transport)'],
    ['non-http apiUrl', { ...base, apiUrl: 'ftp://x' }, 'apiUrl', 'expected an http(s):// URL'],
    ['apiUrl with a query', { ...base, apiUrl: 'http://x/?a=1' }, 'apiUrl', 'without query or fragment'],
    ['missing token', { apiUrl: base.apiUrl, idInstance: ID }, 'apiTokenInstance', 'apiTokenInstance: expected a string'],
    ['empty token', { ...base, apiTokenInstance: '' }, 'apiTokenInstance', 'expected a non-empty token'],
    ['token with a slash', { ...base, apiTokenInstance: `${TOKEN}/x` }, 'apiTokenInstance', 'expected a non-empty token'],
    ['idInstance of another type', { ...base, idInstance: true }, 'idInstance', 'expected a string or a positive integer'],
    ['timeout 0', { ...base, timeoutMs: 0 }, 'timeoutMs', 'expected a positive timeout'],
    ['fractional retries', { ...base, retries: 1.5 }, 'retries', 'retries: expected an integer'],
    [
      'max below base',
      { ...base, retryBaseDelayMs: 1000, retryMaxDelayMs: 10 },
      'retryMaxDelayMs',
      'must not be less than retryBaseDelayMs',
    ],
    ['jitter', { ...base, retryJitter: 'half' }, 'retryJitter', "expected 'full' or 'equal'"],
    ['logger', { ...base, logger: { debug() {} } }, 'logger', 'expected an object with debug, info, warn and error functions'],
    ['clock', { ...base, clock: {} }, 'clock', 'expected a Clock (now, sleep)'],
    ['transport', { ...base, transport: { request: 1 } }, 'transport', 'expected a Transport'],
    ['rateLimit', { ...base, rateLimit: 'no' }, 'rateLimit', 'expected true or false'],
  ];
  it.each(bad)('%s: CLIENT_OPTIONS_INVALID naming the key', (_name, input, field, text) => {
    const err = (() => {
      try {
        createClient(input as never);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toBeInstanceOf(MsgflowError);
    expect((err as MsgflowError).code).toBe('CLIENT_OPTIONS_INVALID');
    expect((err as ValidationError).field).toBe(field);
    expect((err as Error).message).toMatch(/^invalid client options: /);
    expect((err as Error).message).toContain(text);
    expect((err as Error).message).toContain(field);
    expect(String(err)).not.toContain(TOKEN);
  });

  it('rejects something that is not an object', () => {
    expect(() => createClient(undefined as never)).toThrow(/^invalid client options: /);
  });

  it('needs no apiUrl when a transport is given', () => {
    const c = createClient({
      idInstance: ID,
      apiTokenInstance: TOKEN,
      transport: { description: 'in-process', request: async () => ({ statusCode: 200, headers: {}, body: {} }) },
    });
    expect(c.description).toBe('in-process');
  });
});
