/**
 * The service's answers that protect an account or pass by themselves: the
 * plan's quota (466), a request closed before its answer (499), a file too
 * large to send (500), a phone check that timed out and an instance that is
 * starting. Each has its own code and class.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.js';
import { classify, mayHaveBeenProcessed } from '../../src/api/failure.js';
import { whatToFix } from '../../src/actions/kit/guard.js';
import { createClient, type MsgflowClient } from '../../src/client/client.js';
import { ID, PERSONAL, TOKEN, fail } from './helpers/fixtures.js';
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

const CHATS_QUOTA = {
  invokeStatus: { method: 'sendmessage', used: 67, total: 0, status: 'QUOTE_ALLOWED' },
  correspondentsStatus: {
    method: 'correspondents',
    used: 3,
    total: 3,
    status: 'CORRESPONDENTS_QUOTE_EXCEEDED',
    description: 'Monthly quota has been exceeded. You can only send or receive messages from these numbers: 12345678901@c.us',
  },
};

describe('466: the quota of the plan is exceeded', () => {
  it('is QUOTA_EXCEEDED, fatal, not retried, with the exceeded limit as its reason', async () => {
    server.script({ status: 466, json: CHATS_QUOTA });
    const err = await fail(client.sendMessage({ chatId: PERSONAL, message: 'hi' }));
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'QUOTA_EXCEEDED', status: 466 });
    expect((err as ApiError).serviceMessage).toBe(CHATS_QUOTA.correspondentsStatus.description);
    expect(classify(err)).toBe('fatal');
    expect(server.requests).toHaveLength(1);
    expect(whatToFix(err, 'main')).toContain('Monthly quota has been exceeded');
  });

  it('reads the method quota (invokeStatus) when that is the one exceeded', async () => {
    const description = 'Monthly quota has been exceeded. Please go to your personal account';
    server.script({
      status: 466,
      json: { invokeStatus: { method: 'checkwhatsapp', used: 100, total: 100, status: 'QUOTE_EXCEEDED', description } },
    });
    const err = await fail(client.checkWhatsapp({ phoneNumber: 79001112233 }));
    expect(err).toMatchObject({ code: 'QUOTA_EXCEEDED', serviceMessage: description });
  });
});

describe('499 and the 500s that are not a server fault', () => {
  it('499 is REQUEST_CLOSED: retryable, and a write may have happened (only idempotent methods are retried)', async () => {
    server.fallback = { status: 499, json: { message: 'client closed request' } };
    const read = await fail(client.getChatHistory({ chatId: PERSONAL }));
    expect(read).toMatchObject({ code: 'REQUEST_CLOSED', status: 499 });
    expect(classify(read)).toBe('retryable');
    expect(mayHaveBeenProcessed(read)).toBe(true);
    expect(server.requests).toHaveLength(4);
    server.requests.length = 0;
    const write = await fail(client.sendMessage({ chatId: PERSONAL, message: 'hi' }));
    expect(write).toMatchObject({ code: 'REQUEST_CLOSED' });
    expect(server.requests).toHaveLength(1);
  });

  it('500 "File from url exceeded max upload size" is FILE_URL_TOO_LARGE: definite, never retried', async () => {
    server.fallback = { status: 500, json: { message: 'File from url exceeded max upload size' } };
    const err = await fail(client.sendFileByUrl({ chatId: PERSONAL, urlFile: 'https://example.com/big.mp4', fileName: 'big.mp4' }));
    expect(err).toMatchObject({ code: 'FILE_URL_TOO_LARGE', status: 500 });
    expect(classify(err)).toBe('definite');
    expect(server.requests).toHaveLength(1);
  });
});

describe('transient refusals are retryable', () => {
  it("checkWhatsapp's 400 'check phone number timeout limit exceeded' is CHECK_PHONE_TIMEOUT, retryable", async () => {
    server.script({ status: 400, json: { message: 'check phone number timeout limit exceeded' } });
    const err = await fail(client.checkWhatsapp({ phoneNumber: 79001112233 }));
    expect(err).toMatchObject({ code: 'CHECK_PHONE_TIMEOUT', status: 400 });
    expect(classify(err)).toBe('retryable');
  });

  it('checkAccount answering "instance is starting" is INSTANCE_STARTING (retryable); notAuthorized stays fatal', async () => {
    server.script(
      { status: 200, json: { status: false, reason: 'instance is starting' } },
      { status: 200, json: { status: false, reason: 'instance is notAuthorized' } },
    );
    const starting = await fail(client.checkAccount({ phoneNumber: 79001112233 }));
    expect(starting).toMatchObject({ code: 'INSTANCE_STARTING' });
    expect(classify(starting)).toBe('retryable');
    const notAuthorized = await fail(client.checkAccount({ phoneNumber: 79001112233 }));
    expect(classify(notAuthorized)).toBe('fatal');
  });
});
