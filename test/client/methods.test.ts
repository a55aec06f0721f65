import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { API_METHODS, METHOD_SPECS } from '../../src/api/methods.js';
import { createClient, type MsgflowClient } from '../../src/client/client.js';
import { GROUP, ID, PERSONAL, TOKEN, VALID } from './helpers/fixtures.js';
import { startScriptServer, type ScriptServer } from './helpers/script-server.js';

let server: ScriptServer;
let client: MsgflowClient;

beforeEach(async () => {
  server = await startScriptServer();
  client = createClient({ apiUrl: `${server.url}/`, idInstance: ID, apiTokenInstance: TOKEN, rateLimit: false });
});
afterEach(async () => {
  await client.close();
  await server.close();
});

describe('every method over HTTP', () => {
  it.each(API_METHODS)('%s: HTTP method, path, body, typed answer', async (method) => {
    const { request, answer } = VALID[method];
    server.script({ json: answer });
    const call = client[method] as (r: unknown) => Promise<unknown>;
    await expect(call(request)).resolves.toEqual(answer);
    expect(server.requests).toHaveLength(1);
    const got = server.requests[0]!;
    expect(got.method).toBe(METHOD_SPECS[method].httpMethod);
    // Path parameters (deleteNotification's receiptId) follow the token.
    const tail = (METHOD_SPECS[method].pathParams ?? []).map((k) => `/${String(request[k])}`).join('');
    expect(got.path).toBe(`/waInstance${ID}/${method}/${TOKEN}${tail}`);
    const upload = METHOD_SPECS[method].requestBody;
    if (upload === 'multipart') {
      // The file as the `file` part, the other fields as text fields.
      expect(got.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
      expect(got.text).toContain(`name="file"; filename="${String(request.fileName)}"`);
      expect(got.text).toContain(Buffer.from(request.file as Uint8Array).toString());
      for (const field of Object.keys(request).filter((k) => k !== 'file')) expect(got.text).toContain(`name="${field}"`);
    } else if (upload === 'binary') {
      // The file itself as the body, its type and name in headers.
      expect(got.headers['content-type']).toBe('application/pdf');
      expect(got.headers['ga-filename']).toBe('report.pdf');
      expect(got.text).toBe('%PDF-1.4 report');
    } else if (METHOD_SPECS[method].httpMethod === 'POST') {
      expect(got.headers['content-type']).toMatch(/^application\/json/);
      expect(got.body).toMatchObject(request);
    } else {
      expect(got.text).toBe('');
    }
  });

  it.each(API_METHODS.filter((m) => VALID[m].answer !== undefined))(
    '%s: an answer carrying fields the client does not know keeps them (the service adds fields)',
    async (method) => {
      const { request, answer } = VALID[method];
      // An added field on the answer object, and on each element of a list answer.
      const added = (v: unknown): unknown =>
        Array.isArray(v) ? v.map(added) : typeof v === 'object' && v !== null ? { ...v, addedByTheService: { since: 'v2' } } : v;
      const extended = added(answer);
      server.script({ json: extended });
      const call = client[method] as (r: unknown) => Promise<unknown>;
      await expect(call(request)).resolves.toEqual(extended);
    },
  );

  it('sends the parsed body: spec defaults applied, phoneNumber as an integer', async () => {
    server.script({ json: { addContact: true } }, { json: [] }, { json: { exist: false, chatId: '' } });
    await client.addContact({ chatId: PERSONAL, firstName: 'Ann' });
    await client.getChatHistory({ chatId: GROUP });
    await expect(client.checkAccount({ phoneNumber: '79001112233' })).resolves.toEqual({ exist: false, chatId: '' });
    expect(server.requests.map((r) => r.body)).toEqual([
      { chatId: PERSONAL, firstName: 'Ann', saveInAddressbook: true },
      { chatId: GROUP, count: 100 },
      { phoneNumber: 79001112233, force: false },
    ]);
  });

  it('lastOutgoingMessages is a GET with ?minutes=, with or without a request object', async () => {
    server.script({ json: [] }, { json: [] }, { json: [] });
    await client.lastOutgoingMessages();
    await client.lastOutgoingMessages({});
    await client.lastOutgoingMessages({ minutes: 15 });
    expect(server.requests.map((r) => [r.method, r.query])).toEqual([
      ['GET', { minutes: '1440' }],
      ['GET', { minutes: '1440' }],
      ['GET', { minutes: '15' }],
    ]);
  });

  it('the status journals are GETs with ?minutes=, with or without a request object; the statistic takes ?idMessage=', async () => {
    server.script({ json: [] }, { json: [] }, { json: [] });
    await client.getOutgoingStatuses();
    await client.getIncomingStatuses({ minutes: 60 });
    await client.getStatusStatistic({ idMessage: 'BAE5F4886F6F2D05' });
    expect(server.requests.map((r) => [r.method, r.path.split('/')[2], r.query])).toEqual([
      ['GET', 'getOutgoingStatuses', { minutes: '1440' }],
      ['GET', 'getIncomingStatuses', { minutes: '60' }],
      ['GET', 'getStatusStatistic', { idMessage: 'BAE5F4886F6F2D05' }],
    ]);
  });

  it('checkAccount by username', async () => {
    server.script({ json: { exist: true, chatId: PERSONAL, username: '@ann', fromCache: true } });
    const res = await client.checkAccount({ username: '@ann', force: true });
    expect(res.exist).toBe(true);
    expect(server.requests[0]!.body).toEqual({ username: '@ann', force: true });
  });

  it('sends the configured User-Agent and asks for JSON', async () => {
    const c = createClient({ apiUrl: server.url, idInstance: ID, apiTokenInstance: TOKEN, userAgent: 'bot/1.2' });
    server.script({ json: { deleteContact: true } });
    await c.deleteContact({ chatId: PERSONAL });
    await c.close();
    expect(server.requests[0]!.headers['user-agent']).toBe('bot/1.2');
    expect(server.requests[0]!.headers.accept).toBe('application/json');
  });

  it('keeps a path prefix of apiUrl and describes itself without secrets', async () => {
    const c = createClient({ apiUrl: `${server.url}/api/v1//`, idInstance: ID, apiTokenInstance: TOKEN });
    server.script({ json: { deleteContact: true } });
    await c.deleteContact({ chatId: PERSONAL });
    await c.close();
    expect(server.requests[0]!.path).toBe(`/api/v1/waInstance${ID}/deleteContact/${TOKEN}`);
    expect(c.description).toBe(`${server.url}/api/v1/waInstance<INSTANCE_ID>`);
  });

  it('close() frees the kept-alive sockets', async () => {
    server.script({ json: { deleteContact: true } });
    await client.deleteContact({ chatId: PERSONAL });
    expect(await server.connections()).toBe(1);
    await client.close();
    for (let i = 0; i < 500 && (await server.connections()) > 0; i++) await new Promise((r) => setTimeout(r, 2));
    expect(await server.connections()).toBe(0);
  });

  it('accepts a numeric idInstance', async () => {
    const c = createClient({ apiUrl: server.url, idInstance: Number(ID), apiTokenInstance: TOKEN });
    server.script({ json: { deleteContact: false } });
    await expect(c.deleteContact({ chatId: PERSONAL })).resolves.toEqual({ deleteContact: false });
    await c.close();
    expect(server.requests[0]!.path).toBe(`/waInstance${ID}/deleteContact/${TOKEN}`);
  });
});
