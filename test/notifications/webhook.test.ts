import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { identityOf } from '../../src/runtime/clients.js';
import { startNotificationConsumers, type NotificationConsumers } from '../../src/runtime/notifications/consumers.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { rawExchange } from '../support/raw-http.js';

const TOKEN = 'hook-secret-7f3a';
const logger = { debug() {}, info() {}, warn() {}, error() {} };

function project(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-webhook-'));
  mkdirSync(path.join(dir, 'flows'));
  writeFileSync(
    path.join(dir, 'config.yaml'),
    `instances:
  default:
    apiUrl: local
    notifications: webhook
local:
  port: 0
  dataDir: .msgflow/local
  instances:
    - idInstance: "1101000777"
      apiTokenInstance: local-token-abcdef
      # The test reads the settings the consumer has just set: without this, getSettings's one call a second waits.
      rateLimits: { getSettings: 0 }
webhook: { port: 0, path: /hooks/msgflow, token: ${TOKEN} }
store: { driver: lowdb, dir: .msgflow/state }
`,
  );
  writeFileSync(
    path.join(dir, 'flows/on-stop.yaml'),
    `name: on-stop
on:
  notification: { type: incomingMessageReceived, text: "^stop$" }
steps:
  - id: note
    uses: log
    with: { message: "\${{ event.senderData.chatId }} wrote stop" }
`,
  );
  return dir;
}

const body = (idInstance: number, idMessage: string) => ({
  typeWebhook: 'incomingMessageReceived',
  instanceData: { idInstance, wid: '79990000000@c.us', typeInstance: 'whatsapp' },
  timestamp: Math.floor(Date.now() / 1000),
  idMessage,
  senderData: { chatId: '79001112233@c.us', chatName: 'Alice', sender: '79001112233@c.us', senderName: 'Alice', senderContactName: '' },
  messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: 'STOP' } },
});

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

async function start(dir: string): Promise<{ runtime: Runtime; consumers: NotificationConsumers }> {
  const config = loadConfig(path.join(dir, 'config.yaml'));
  const runtime = await createRuntime({ config, command: 'start' });
  const { flows, errors } = runtime.flows();
  expect(errors).toEqual([]);
  const consumers = await startNotificationConsumers({ ...runtime, flows, identityFor: (n) => identityOf(config, n), logger });
  cleanup = async () => {
    await consumers.stop();
    await runtime.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { runtime, consumers };
}

const post = (url: string, data: unknown, auth?: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify(data),
  });

describe('webhook mode', () => {
  it('refuses requests without the Bearer token (401), records one run per notification, acknowledges a redelivery', async () => {
    const { runtime, consumers } = await start(project());
    expect(consumers.instances).toEqual([{ name: 'default', mode: 'webhook' }]);
    const url = consumers.webhookUrl!;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/hooks\/msgflow$/);
    // A new instance produces no notifications: the consumer turned on what it reads.
    expect(await runtime.clientFor('default').getSettings({})).toMatchObject({
      incomingWebhook: 'yes',
      outgoingWebhook: 'yes',
      stateWebhook: 'no',
    });

    const none = await post(url, body(1101000777, 'W1'));
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect((await post(url, body(1101000777, 'W1'), 'Bearer wrong-token')).status).toBe(401);
    expect(await runtime.engine.listRuns()).toEqual([]);

    const ok = await post(url, body(1101000777, 'W1'), `Bearer ${TOKEN}`);
    expect(ok.status).toBe(200);
    // 2xx means recorded: the run exists when the answer arrives.
    const runs = await runtime.engine.listRuns({ flow: 'on-stop' });
    expect(runs.map((r) => r.trigger)).toEqual(['notification']);

    // The service retries (e.g. it did not see our 200), here with a later timestamp:
    // acknowledged again, no second run (the message id, not the time, names the notification).
    const again = { ...body(1101000777, 'W1'), timestamp: body(1101000777, 'W1').timestamp + 5 };
    expect((await post(url, again, `Bearer ${TOKEN}`)).status).toBe(200);
    expect(await runtime.engine.listRuns({ flow: 'on-stop' })).toHaveLength(1);

    // Another instance's notification, a body that is not one, another path.
    expect((await post(url, body(1101000999, 'W2'), `Bearer ${TOKEN}`)).status).toBe(404);
    expect((await post(url, { hello: 1 }, `Bearer ${TOKEN}`)).status).toBe(400);
    expect((await post(url.replace('/hooks/msgflow', '/other'), body(1101000777, 'W3'), `Bearer ${TOKEN}`)).status).toBe(404);
    const done = await runtime.engine.getRun(runs[0]!.id);
    expect(done?.event).toMatchObject({ instance: 'default', senderData: { chatId: '79001112233@c.us' } });
    expect(JSON.stringify(done?.event)).not.toContain('1101000777');
  });

  it('refuses a notification nested 5,000 deep with a 400 naming the limit: not recorded, and not to be delivered again', async () => {
    const { runtime, consumers } = await start(project());
    const url = consumers.webhookUrl!;
    const deep = JSON.stringify(body(1101000777, 'W9')).replace(
      '"messageData":',
      `"deep":${'['.repeat(5000)}${']'.repeat(5000)},"messageData":`,
    );
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: deep,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: 'not a notification: the body is nested more than 64 levels deep, the most a request body may be',
    });
    expect(await runtime.engine.listRuns()).toEqual([]);
  });

  it('answers 413 to a body over 1 MiB before it closes the connection, without inviting one announced with Expect', async () => {
    const { consumers } = await start(project());
    const url = new URL(consumers.webhookUrl!);
    const port = Number(url.port);
    const size = 2 * 1024 * 1024;
    const head = (extra: string) =>
      `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n${extra}\r\n`;
    const expect100 = await rawExchange(port, [head(`Content-Length: ${size}\r\nExpect: 100-continue\r\n`)], {
      until: (r) => r.statuses.includes(100),
    });
    expect(expect100.statuses).toEqual([413]);
    expect(JSON.parse(expect100.lastBody)).toEqual({ error: 'a notification is at most 1048576 bytes' });
    const chunk = Buffer.alloc(256 * 1024, 0x20);
    const chunks: Array<string | Buffer> = [head('Transfer-Encoding: chunked\r\n')];
    for (let sent = 0; sent < size; sent += chunk.length) chunks.push(`${chunk.length.toString(16)}\r\n`, chunk, '\r\n');
    const streamed = await rawExchange(port, [...chunks, '0\r\n\r\n']);
    expect(streamed.statuses).toEqual([413]);
    expect(streamed.lastBody).toContain('at most 1048576 bytes');
  });

  it('config: webhook mode without a webhook: section is an error naming the key', () => {
    const dir = project();
    writeFileSync(path.join(dir, 'config.yaml'), 'instances:\n  default: { apiUrl: local, notifications: webhook }\n');
    expect(() => loadConfig(path.join(dir, 'config.yaml'))).toThrow(
      /config\.yaml:2:\d+ instances\.default\.notifications: webhook needs a top-level webhook:/,
    );
    rmSync(dir, { recursive: true, force: true });
  });
});
