import { inspect } from 'node:util';
import { NetworkError } from '../../src/api/errors.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type MsgflowClient } from '../../src/client/client.js';
import { createHttpTransport } from '../../src/client/http-transport.js';
import type { ClientLogger, ClientOptions } from '../../src/client/options.js';
import { ID, PERSONAL, TOKEN, VALID } from './helpers/fixtures.js';
import { RecordingClock } from './helpers/recording-clock.js';
import { freePort, startScriptServer, type ScriptServer } from './helpers/script-server.js';

// A server per test: a request of one scenario still on its way (the timeout scenario gives up
// after 100 ms, before a loaded machine may have delivered it) cannot take the next one's step.
let server: ScriptServer;
beforeEach(async () => {
  server = await startScriptServer();
});
afterEach(async () => {
  await server.close();
});

/** Everything an error exposes, as text: message, String, JSON, inspect with hidden fields, each cause. */
function exposed(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e !== undefined && depth < 10; depth++) {
    parts.push(String(e), JSON.stringify(e) ?? '', inspect(e, { depth: 10, showHidden: true }));
    if (e instanceof Error) parts.push(e.message, e.stack ?? '');
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join('\n');
}

function expectClean(text: string) {
  expect(text).not.toContain(TOKEN);
  expect(text).not.toContain(ID);
  // Not even a fragment of the token (e.g. cut by a truncated excerpt).
  expect(text).not.toContain(TOKEN.slice(0, 8));
  expect(text).not.toContain(TOKEN.slice(-8));
}

function recordingLogger(lines: string[]): ClientLogger {
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    lines.push(JSON.stringify({ level, message, fields }));
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}

const secretPath = () => `${server.url}/waInstance${ID}/getChatHistory/${TOKEN}`;

type Scenario = [string, (opts: Partial<ClientOptions>) => Promise<unknown>];

const scenarios: Scenario[] = [
  [
    '4xx echoing the URL in message',
    async (o) => {
      server.script({ status: 401, json: { message: `bad token ${TOKEN} for instance ${ID} at ${secretPath()}` } });
      return client(o).getChatHistory({ chatId: PERSONAL });
    },
  ],
  [
    '5xx echoing the URL, retried',
    async (o) => {
      server.script(...Array.from({ length: 4 }, () => ({ status: 500, json: { message: `failed ${secretPath()}` } })));
      return client(o).getChatHistory({ chatId: PERSONAL });
    },
  ],
  [
    '429 echoing the URL',
    async (o) => {
      server.script(
        ...Array.from({ length: 4 }, () => ({ status: 429, json: { reason: `slow ${secretPath()}` }, headers: { 'retry-after': '1' } })),
      );
      return client(o).getChatHistory({ chatId: PERSONAL });
    },
  ],
  [
    '404 plain text echoing the URL',
    async (o) => {
      server.script({ status: 404, raw: `Cannot POST /waInstance${ID}/getChatHistory/${TOKEN}` });
      return client(o).getChatHistory({ chatId: PERSONAL });
    },
  ],
  [
    'checkAccount reason echoing secrets',
    async (o) => {
      server.script({ json: { status: false, reason: `instance ${ID} (${TOKEN}) is notAuthorized` } });
      return client(o).checkAccount({ phoneNumber: 79001112233 });
    },
  ],
  [
    'checkAccount rate_limit_exceeded',
    async (o) => {
      server.script({ json: { status: false, data: { status: 'fail', reason: 'rate_limit_exceeded', retryAfter: 60 } } });
      return client(o).checkAccount({ phoneNumber: 79001112233 });
    },
  ],
  [
    'bad success body cut short around the token',
    async (o) => {
      server.script({ raw: `<html>${'x'.repeat(48)}${TOKEN}${ID}</html>` });
      return client(o).getChatHistory({ chatId: PERSONAL });
    },
  ],
  [
    'connection refused',
    async (o) => {
      const port = await freePort();
      return client({ ...o, apiUrl: `http://127.0.0.1:${port}` }).sendFileByUrl(VALID.sendFileByUrl.request as never);
    },
  ],
  [
    'timeout',
    async (o) => {
      server.script({ hang: true });
      return client({ ...o, timeoutMs: 100, retries: 0 }).getChatHistory({ chatId: PERSONAL });
    },
  ],
  [
    'reset after the body',
    async (o) => {
      server.script({ reset: true });
      return client(o).addContact({ chatId: PERSONAL, firstName: 'Ann' });
    },
  ],
  ['DNS failure', async (o) => client({ ...o, apiUrl: 'http://no-such-host.invalid', retries: 0 }).deleteContact({ chatId: PERSONAL })],
  ['validation', async (o) => client(o).getMessage({ chatId: `${TOKEN}@c.us`, idMessage: ID })],
  [
    'a transport failing with a raw error that holds the URL',
    async (o) =>
      client({
        ...o,
        retries: 0,
        transport: {
          description: 'custom',
          request: async () => {
            const e = new Error(`request to ${secretPath()} failed`);
            Object.assign(e, { options: { url: secretPath() }, code: 'EWEIRD' });
            throw e;
          },
        },
      }).getChatHistory({ chatId: PERSONAL }),
  ],
  ['invalid options', async (o) => client({ ...o, apiTokenInstance: `${TOKEN}/${ID}`, idInstance: `${ID}?` })],
];

const opened: MsgflowClient[] = [];
function client(over: Partial<ClientOptions>): MsgflowClient {
  const c = createClient({ apiUrl: server.url, idInstance: ID, apiTokenInstance: TOKEN, rateLimit: false, ...over });
  opened.push(c);
  return c;
}

describe('the token and the instance id never leak', () => {
  it.each(scenarios)('%s', async (_name, run) => {
    const lines: string[] = [];
    const err = await Promise.resolve()
      .then(() => run({ logger: recordingLogger(lines), clock: new RecordingClock() }))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(Error);
    expectClean(exposed(err));
    expectClean(lines.join('\n'));
    await Promise.all(opened.splice(0).map((c) => c.close()));
  });

  it('the logger gets a debug line per attempt: method, redacted path, status, attempt', async () => {
    const lines: string[] = [];
    server.script({ status: 503, json: {} }, { json: [] });
    const c = client({ logger: recordingLogger(lines), clock: new RecordingClock() });
    await c.getChatHistory({ chatId: PERSONAL });
    await c.close();
    const attempts = lines.map((l) => JSON.parse(l)).filter((l) => l.fields?.status !== undefined);
    expect(attempts.map((l) => [l.level, l.fields.method, l.fields.path, l.fields.status, l.fields.attempt])).toEqual([
      ['debug', 'getChatHistory', '/waInstance<INSTANCE_ID>/getChatHistory/<API_TOKEN>', 503, 1],
      ['debug', 'getChatHistory', '/waInstance<INSTANCE_ID>/getChatHistory/<API_TOKEN>', 200, 2],
    ]);
    for (const a of attempts) expect(typeof a.fields.durationMs).toBe('number');
    expectClean(lines.join('\n'));
  });

  it('descriptions are redacted', () => {
    const t = createHttpTransport({ apiUrl: server.url, idInstance: ID, apiTokenInstance: TOKEN });
    expect(t.description).toBe(`${server.url}/waInstance<INSTANCE_ID>`);
    const c = client({});
    expectClean(c.description + inspect(c, { showHidden: true, depth: 5 }));
  });
});

describe('errors of a custom transport', () => {
  it('a NetworkError carrying a secret is rebuilt redacted, keeping its meaning', async () => {
    const leaky = new NetworkError('getChatHistory', `ECONNREFUSED /waInstance${ID}/x/${TOKEN}`, false, {
      cause: new Error(`connect to ${TOKEN}`),
    });
    const clean = new NetworkError('getChatHistory', 'timeout', true, { code: 'TIMEOUT', timeoutMs: 5 });
    const answers = [leaky, clean];
    const c = createClient({
      idInstance: ID,
      apiTokenInstance: TOKEN,
      retries: 0,
      rateLimit: false,
      transport: {
        description: 'custom',
        request: async () => {
          throw answers.shift();
        },
      },
    });
    const first = (await c.getChatHistory({ chatId: PERSONAL }).catch((e: unknown) => e)) as NetworkError;
    expect(first).toBeInstanceOf(NetworkError);
    expect(first).toMatchObject({ code: 'NETWORK_ERROR', mayHaveReachedServer: false });
    expect(first.message).toBe('getChatHistory: network error ECONNREFUSED /waInstance<INSTANCE_ID>/x/<API_TOKEN>');
    expectClean(exposed(first));
    // One without secrets is passed through as it is.
    await expect(c.getChatHistory({ chatId: PERSONAL })).rejects.toBe(clean);
  });
});
