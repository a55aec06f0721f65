/**
 * Hostile and broken requests over real HTTP: each gets a clear 4xx JSON
 * answer, never a 500, and the server keeps serving.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A, ALICE, conformanceConfig, startLocal, type LocalUnderTest } from '../support/local-service.js';
import type { ManualClock } from '../../src/util/clock.js';
import { rawExchange } from '../support/raw-http.js';

interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let h: LocalUnderTest<ManualClock>;
let base: URL;

function raw(
  method: string,
  path: string,
  opts: { headers?: Record<string, string | number>; body?: Buffer | string; chunked?: boolean } = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const headers = { ...opts.headers };
    // Framed like a well-behaved client: a body always has a length or is chunked.
    if (opts.body !== undefined && !opts.chunked) headers['content-length'] = Buffer.byteLength(opts.body);
    const req = http.request({ host: base.hostname, port: base.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (opts.body !== undefined) {
      if (opts.chunked) {
        const b = Buffer.from(opts.body);
        for (let i = 0; i < b.length; i += 64 * 1024) req.write(b.subarray(i, i + 64 * 1024));
      } else req.write(opts.body);
    }
    req.end();
  });
}

const p = (method: string) => `/waInstance${A.idInstance}/${method}/${A.apiTokenInstance}`;
const JSON_CT = { 'content-type': 'application/json' };
const post = (method: string, body: string | Buffer, headers: Record<string, string> = JSON_CT) =>
  raw('POST', p(method), { headers, body });
const message = (r: RawAnswer) => (JSON.parse(r.body) as { message: string }).message;

beforeAll(async () => {
  h = await startLocal({ kind: 'http', config: conformanceConfig((c) => Object.assign(c, { maxBodyBytes: 64 * 1024 })) });
  const l = await h.service.listen(0, '127.0.0.1');
  base = new URL(l.url);
});
afterAll(() => h.close());

describe('bad input over HTTP', () => {
  it('malformed JSON: 400 naming the problem, not the body', async () => {
    for (const body of ['{"chatId":', '{chatId: 1}', '[1,2,', '\u0000{}', 'nul\u0000l']) {
      const r = await post('getChatHistory', body);
      expect(r.status, body).toBe(400);
      expect(message(r)).toMatch(/^Validation failed\. Details: request body is not valid JSON/);
      expect(r.headers['content-type']).toMatch(/application\/json/);
    }
  });

  it('wrong Content-Type: 415', async () => {
    for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const r = await post('getChatHistory', JSON.stringify({ chatId: ALICE }), { 'content-type': ct });
      expect(r.status).toBe(415);
      expect(message(r)).toBe(`Content-Type must be application/json, got '${ct}'`);
    }
    const none = await raw('POST', p('getChatHistory'), { body: JSON.stringify({ chatId: ALICE }) });
    expect(none.status).toBe(415);
    // With a charset it is still JSON.
    expect(
      (await post('getChatHistory', JSON.stringify({ chatId: ALICE }), { 'content-type': 'application/json; charset=utf-8' })).status,
    ).toBe(200);
  });

  it('wrong HTTP method: 405 with Allow', async () => {
    for (const method of ['PUT', 'DELETE', 'PATCH', 'GET']) {
      const r = await raw(method, p('addContact'), { headers: JSON_CT, body: '{}' });
      expect(r.status, method).toBe(405);
      expect(r.headers.allow).toBe('POST');
    }
    expect((await raw('POST', p('lastOutgoingMessages'), { headers: JSON_CT, body: '{}' })).status).toBe(405);
  });

  it('unknown method or path: 404 JSON', async () => {
    const r = await post('sendTemplate', '{}');
    expect(r.status).toBe(404);
    expect(message(r)).toBe("unknown method 'sendTemplate'");
    for (const path of [
      '/',
      '/waInstance',
      `/waInstance${A.idInstance}/getMessage`,
      '/foo/bar/baz/qux',
      '/waInstance%ZZ/getMessage/x',
      '/files/..%2F..%2Fetc/passwd',
    ]) {
      const res = await raw('GET', path);
      expect(res.status, path).toBe(404);
      expect(() => JSON.parse(res.body)).not.toThrow();
    }
  });

  it('oversized body: 413, declared or streamed', async () => {
    const big = JSON.stringify({ chatId: ALICE, pad: 'x'.repeat(200 * 1024) });
    const declared = await post('getChatHistory', big);
    expect(declared.status).toBe(413);
    expect(message(declared)).toBe('request body is larger than 65536 bytes');
    const chunked = await raw('POST', p('getChatHistory'), {
      headers: { ...JSON_CT, 'transfer-encoding': 'chunked' },
      body: big,
      chunked: true,
    });
    expect(chunked.status).toBe(413);
  });

  it('a body announced over the limit with Expect: 100-continue: 413 at once, the body never invited', async () => {
    const port = Number(base.port);
    const x = await rawExchange(
      port,
      [
        `POST ${p('getChatHistory')} HTTP/1.1\r\nHost: ${base.host}\r\nContent-Type: application/json\r\nContent-Length: 200000\r\nExpect: 100-continue\r\n\r\n`,
      ],
      { until: (r) => r.statuses.includes(100) },
    );
    expect(x.statuses).toEqual([413]);
    expect(JSON.parse(x.lastBody)).toEqual({ message: 'request body is larger than 65536 bytes' });
  });

  it('a body nested 5,000 deep: 400 naming the depth limit', async () => {
    const deep = `{"chatId":"${ALICE}","x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const res = await post('getChatHistory', deep);
    expect(res.status).toBe(400);
    expect(message(res)).toBe(
      'Validation failed. Details: request body is nested more than 64 levels deep, the most a request body may be',
    );
  });

  it('a body handed over already parsed (as the in-process transport does) meets the same depth limit and Content-Type rule', async () => {
    let nested: unknown = [];
    for (let i = 0; i < 5000; i++) nested = [nested];
    const path = `/waInstance${A.idInstance}/getChatHistory/${A.apiTokenInstance}`;
    const deep = await h.service.handle({
      httpMethod: 'POST',
      path,
      headers: { 'content-type': 'application/json' },
      json: { chatId: ALICE, x: nested },
    });
    expect(deep.status).toBe(400);
    expect((deep.body as { message: string }).message).toBe(
      'Validation failed. Details: request body is nested more than 64 levels deep, the most a request body may be',
    );
    const text = await h.service.handle({ httpMethod: 'POST', path, headers: { 'content-type': 'text/plain' }, json: { chatId: ALICE } });
    expect(text.status).toBe(415);
  });

  it('wrong field types: 400 naming the field', async () => {
    const cases: [string, unknown, RegExp][] = [
      ['getChatHistory', { chatId: 79001112233 }, /'chatId' must be a string/],
      ['getChatHistory', { chatId: ALICE, count: '5' }, /'count' must be a number/],
      ['getChatHistory', { chatId: ALICE, count: 1.5 }, /'count' must be an integer/],
      ['addContact', { chatId: ALICE, firstName: { a: 1 } }, /'firstName' must be a string/],
      ['addContact', { chatId: ALICE, firstName: 'A', saveInAddressbook: 'yes' }, /'saveInAddressbook' must be a boolean/],
      ['getChatHistory', [ALICE], /request body must be a JSON object/],
      ['getChatHistory', 'chat', /request body must be a JSON object/],
      ['getChatHistory', null, /request body must be a JSON object/],
      ['checkAccount', { phoneNumber: true }, /'phoneNumber' must contain only digits/],
      ['sendFileByUrl', { chatId: ALICE, urlFile: 42, fileName: 'a.png' }, /'urlFile' must be a string/],
    ];
    for (const [method, body, re] of cases) {
      const r = await post(method, JSON.stringify(body));
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(message(r)).toMatch(re);
    }
    expect(message(await raw('POST', p('getChatHistory'), { headers: JSON_CT }))).toMatch(/request body must be a JSON object/);
  });

  it('NUL bytes in strings: 400', async () => {
    for (const body of [{ chatId: `${ALICE}\u0000` }, { chatId: ALICE, idMessage: 'A'.repeat(16) + '\u0000' }]) {
      const r = await post('getMessage', JSON.stringify(body));
      expect(r.status).toBe(400);
      expect(message(r)).toMatch(/^Validation failed/);
    }
    const r = await post('addContact', JSON.stringify({ chatId: ALICE, firstName: 'A\u0000B' }));
    expect(message(r)).toBe("Validation failed. Details: 'firstName' must not contain NUL characters");
  });

  it('huge numbers: 400, never a crash', async () => {
    const bodies: [string, string][] = [
      ['getChatHistory', `{"chatId":"${ALICE}","count":1e400}`],
      ['getChatHistory', `{"chatId":"${ALICE}","count":9007199254740993}`],
      ['getChatHistory', `{"chatId":"${ALICE}","count":-1e308}`],
      ['checkAccount', '{"phoneNumber":1e308}'],
      ['checkAccount', `{"phoneNumber":${'9'.repeat(400)}}`],
      ['sendFileByUrl', `{"chatId":"${ALICE}","urlFile":"http://x/a.png","fileName":"a.png","typingTime":1e999}`],
    ];
    for (const [method, body] of bodies) {
      const r = await post(method, body);
      expect(r.status, body.slice(0, 60)).toBe(400);
    }
    const q = await raw('GET', `${p('lastOutgoingMessages')}?minutes=${'9'.repeat(500)}`);
    expect(q.status).toBe(400);
    expect(message(q)).toBe("Validation failed. Details: 'minutes' must be a number");
  });

  it('odd but harmless input: deep nesting, __proto__, invalid UTF-8, control characters in the method', async () => {
    const deep = '['.repeat(30_000) + ']'.repeat(30_000);
    expect((await post('getChatHistory', deep)).status).toBe(400);
    const proto = await post('getChatHistory', `{"__proto__":{"polluted":true},"chatId":"${ALICE}"}`);
    expect(proto.status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const utf = await post('getChatHistory', Buffer.from([0x7b, 0x22, 0x63, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]));
    expect(utf.status).toBe(400);
    const ctl = await raw('POST', `/waInstance${A.idInstance}/%01%02evil/${A.apiTokenInstance}`, { headers: JSON_CT, body: '{}' });
    expect(ctl.status).toBe(404);
    expect(message(ctl)).toBe("unknown method '??evil'");
  });

  it('the server is still up and answering after all of it', async () => {
    const r = await post('getChatHistory', JSON.stringify({ chatId: ALICE }));
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual([]);
  });
});
