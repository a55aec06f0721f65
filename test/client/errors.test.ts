import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AccountCheckError, ApiError, MsgflowError, NetworkError, RateLimitError } from '../../src/api/errors.js';
import { classify } from '../../src/api/failure.js';
import { createClient, type MsgflowClient } from '../../src/client/client.js';
import { ID, PERSONAL, TOKEN, VALID, message, fail } from './helpers/fixtures.js';
import { RecordingClock } from './helpers/recording-clock.js';
import { startScriptServer, type ScriptServer } from './helpers/script-server.js';

let server: ScriptServer;
let client: MsgflowClient;
let clock: RecordingClock;

beforeEach(async () => {
  server = await startScriptServer();
  clock = new RecordingClock();
  client = createClient({ apiUrl: server.url, idInstance: ID, apiTokenInstance: TOKEN, clock, rateLimit: false });
});
afterEach(async () => {
  await client.close();
  await server.close();
});

describe('HTTP statuses map to typed errors', () => {
  const clientErrors: Array<[number, string, string]> = [
    [400, "Validation failed. Details: 'firstName' is required", 'VALIDATION_FAILED'],
    [401, 'wrong apiTokenInstance for this instance', 'UNAUTHORIZED'],
    [403, 'unknown instance', 'INSTANCE_NOT_FOUND'],
    [404, `${PERSONAL} is not on the messenger`, 'NOT_ON_MESSENGER'],
    [413, 'request body is larger than 1048576 bytes', 'PAYLOAD_TOO_LARGE'],
  ];
  it.each(clientErrors)('%i -> ApiError with the service message and a catalogue code, not retried', async (status, text, code) => {
    server.script({ status, json: { message: text } });
    const err = await fail(client.editContact({ chatId: PERSONAL, firstName: 'Ann' }));
    expect(err).toBeInstanceOf(ApiError);
    expect(err).not.toBeInstanceOf(RateLimitError);
    expect(err).toMatchObject({ code, status, method: 'editContact', serviceMessage: text });
    expect(err.message).toBe(`editContact failed with HTTP ${status}: ${text}`);
    expect(server.requests).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("reads the spec's misspelt `messsage` field and plain-text bodies too", async () => {
    server.script({ status: 400, json: { messsage: 'Validation failed' } }, { status: 404, raw: 'Not Found' }, { status: 400, raw: '' });
    expect((await fail(client.getMessage(VALID.getMessage.request as never))).message).toBe(
      'getMessage failed with HTTP 400: Validation failed',
    );
    expect((await fail(client.getMessage(VALID.getMessage.request as never))).message).toBe('getMessage failed with HTTP 404: Not Found');
    expect((await fail(client.getMessage(VALID.getMessage.request as never))).message).toBe('getMessage failed with HTTP 400: HTTP 400');
  });

  it.each([500, 502, 503])('%i -> retried, then ApiError', async (status) => {
    server.fallback = { status, json: { message: 'upstream trouble' } };
    const err = await fail(client.getChatHistory({ chatId: PERSONAL }));
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'SERVER_ERROR', status, serviceMessage: 'upstream trouble' });
    expect(classify(err)).toBe('retryable');
    expect(server.requests).toHaveLength(4); // 1 + retries (3)
    expect(clock.sleeps).toHaveLength(3);
  });

  it('429 -> retried, then RateLimitError scope http with the last Retry-After', async () => {
    server.fallback = { status: 429, json: { message: 'slow down' }, headers: { 'retry-after': '2' } };
    const err = await fail(client.getMessage(VALID.getMessage.request as never));
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err).toMatchObject({ code: 'TOO_MANY_REQUESTS', scope: 'http', status: 429, retryAfterMs: 2000, serviceMessage: 'slow down' });
    expect(classify(err)).toBe('retryable');
    expect(server.requests).toHaveLength(4);
  });

  it('a 3xx is not followed (it would carry the token elsewhere)', async () => {
    server.script({ status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } });
    const err = await fail(client.deleteContact({ chatId: PERSONAL }));
    expect(err).toMatchObject({ name: 'ApiError', status: 302 });
    expect(server.requests).toHaveLength(1);
  });
});

describe('one failure model: catalogue codes and their class', () => {
  const cases: Array<[string, number, string, string, string]> = [
    ['addContact', 400, `Contact ${PERSONAL} already exists`, 'CONTACT_EXISTS', 'definite'],
    ['addContact', 400, "Validation failed. Details: 'firstName' is required", 'VALIDATION_FAILED', 'definite'],
    ['addContact', 404, `${PERSONAL} is not on the messenger`, 'NOT_ON_MESSENGER', 'definite'],
    ['deleteContact', 404, `${PERSONAL} is not on the messenger`, 'NOT_ON_MESSENGER', 'definite'],
    ['addContact', 401, 'Unauthorized', 'UNAUTHORIZED', 'fatal'],
    ['addContact', 403, 'Forbidden', 'INSTANCE_NOT_FOUND', 'fatal'],
    ['getMessage', 400, 'chatId not found', 'CHAT_NOT_FOUND', 'definite'],
    ['getMessage', 400, "Message not found by id 'BAE5F4886F6F2D05'", 'MESSAGE_NOT_FOUND', 'definite'],
    ['getMessage', 404, 'Not Found', 'PATH_NOT_FOUND', 'definite'],
    ['deleteStatus', 400, 'ID message notfound', 'STATUS_NOT_FOUND', 'definite'],
    ['getStatusStatistic', 400, 'ID message notfound', 'STATUS_NOT_FOUND', 'definite'],
  ];
  it.each(cases)('%s HTTP %i %s -> %s (%s)', async (method, status, text, code, klass) => {
    server.script({ status, json: { message: text } });
    const call = (client as unknown as Record<string, (b: unknown) => Promise<unknown>>)[method]!;
    const err = await fail(call(VALID[method as keyof typeof VALID].request));
    expect(err.code).toBe(code);
    expect(err.code).not.toBe('API_ERROR');
    expect(classify(err)).toBe(klass);
  });

  it('a refused connection is CONNECTION_REFUSED (fatal) before the service ever answered, NETWORK_ERROR (retryable) after', async () => {
    const dead = createClient({
      apiUrl: 'http://127.0.0.1:1',
      idInstance: ID,
      apiTokenInstance: TOKEN,
      clock,
      rateLimit: false,
      retries: 0,
    });
    const err = await fail(dead.getChatHistory({ chatId: PERSONAL }));
    await dead.close();
    expect(err.code).toBe('CONNECTION_REFUSED');
    expect(classify(err)).toBe('fatal');
    expect(classify(new NetworkError('getChatHistory', 'ECONNREFUSED', false))).toBe('retryable');
  });

  it('a plain Error is definite unless its cause says otherwise', () => {
    expect(classify(new Error('boom'))).toBe('definite');
    expect(classify(new Error('wrapped', { cause: new MsgflowError('TIMEOUT', { method: 'x', timeoutMs: 1 }) }))).toBe('retryable');
  });
});

describe('checkAccount failures inside the body', () => {
  it('{status:false, reason} with HTTP 200 -> AccountCheckError, not retried', async () => {
    server.script({ json: { status: false, reason: 'instance is notAuthorized' } });
    const err = await fail(client.checkAccount({ phoneNumber: 79001112233 }));
    expect(err).toBeInstanceOf(AccountCheckError);
    expect(err).toMatchObject({ code: 'INSTANCE_NOT_READY', reason: 'instance is notAuthorized', status: 200, method: 'checkAccount' });
    expect(classify(err)).toBe('fatal');
    expect(server.requests).toHaveLength(1);
  });

  it('{status:false, reason} with HTTP 400 -> AccountCheckError with that status', async () => {
    server.script({ status: 400, json: { status: false, reason: 'request should contain phoneNumber or username' } });
    const err = await fail(client.checkAccount({ username: '@ann' }));
    expect(err).toBeInstanceOf(AccountCheckError);
    expect(err.status).toBe(400);
    expect(err.code).toBe('CHECK_ACCOUNT_TARGET');
    expect(classify(err)).toBe('definite');
  });

  it('rate_limit_exceeded -> RateLimitError scope checkAccount, retryAfterMs from retryAfter, never retried', async () => {
    server.script({ json: { status: false, data: { status: 'fail', reason: 'rate_limit_exceeded', retryAfter: 7200 } } });
    const err = await fail(client.checkAccount({ phoneNumber: 79001112233 }));
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err).toMatchObject({ code: 'CHECK_ACCOUNT_RATE_LIMIT', scope: 'checkAccount', retryAfterMs: 7_200_000, status: 200 });
    expect(server.requests).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it('{exist:false, chatId:""} is a success', async () => {
    server.script({ json: { exist: false, chatId: '' } });
    await expect(client.checkAccount({ phoneNumber: 79001112233 })).resolves.toEqual({ exist: false, chatId: '' });
  });
});

describe('unexpected success bodies -> BAD_RESPONSE', () => {
  const cases: Array<[string, string | undefined, unknown, RegExp]> = [
    ['addContact', undefined, { message: 'odd' }, /expected \{addContact: boolean\}/],
    ['deleteContact', undefined, { deleteContact: 'yes' }, /expected \{deleteContact: boolean\}/],
    ['getChatHistory', undefined, { messages: [] }, /expected an array of messages/],
    ['getChatHistory', undefined, [message(), { foo: 1 }], /item without idMessage/],
    ['getMessage', undefined, [message()], /expected a message with idMessage/],
    ['sendFileByUrl', undefined, {}, /expected \{idMessage: string\}/],
    ['checkAccount', undefined, { chatId: PERSONAL }, /expected \{exist: boolean/],
    ['lastOutgoingMessages', '<html>oops</html>', undefined, /body is not JSON: <html>oops<\/html>/],
    ['editContact', '', undefined, /empty body/],
    ['getMessagesCount', undefined, { count: '3' }, /expected \{count: number\}/],
    ['qr', undefined, { message: 'x' }, /expected \{type: string\}/],
    ['clearWebhooksQueue', undefined, { reason: '' }, /expected \{isCleared: boolean\}/],
    ['lastIncomingCalls', undefined, { calls: [] }, /expected an array/],
    ['getStateInstanceHistory', undefined, [{ timestamp: 1 }], /records with stateInstance/],
  ];
  it.each(cases)('%s %s%j', async (method, raw, json, reason) => {
    server.script(raw === undefined ? { json } : { raw });
    const call = (client as unknown as Record<string, (b: unknown) => Promise<unknown>>)[method]!;
    const err = await fail(call(VALID[method as keyof typeof VALID].request));
    expect(err).toBeInstanceOf(MsgflowError);
    expect(err.code).toBe('BAD_RESPONSE');
    expect(err.message).toMatch(new RegExp(`^${method}: unexpected response \\(`));
    expect(err.message).toMatch(reason);
    expect(server.requests).toHaveLength(1);
  });
});
