/**
 * Hostile request lines and lookups: any request-target
 * answers 400 (never 500), over a real socket since fetch would normalise
 * them; route tables have no prototype; dotfiles are never served.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSchema } from '../../src/local/config.js';
import { startLocal, type LocalUnderTest } from '../support/local-service.js';
import { rawExchange } from '../support/raw-http.js';

const ID = '1101000001';
const TOKEN = 'targets-token-123';

/** Sends one raw request line; resolves with the status code and body. */
function raw(port: number, target: string, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(`${method} ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    let text = '';
    s.on('data', (c) => (text += c.toString('latin1')));
    s.on('end', () => {
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (!m) return reject(new Error(`no status line for ${target}: ${JSON.stringify(text.slice(0, 80))}`));
      resolve({ status: Number(m[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
    s.on('error', reject);
  });
}

describe('request-targets, route tables and static files', () => {
  let local: LocalUnderTest;
  let port: number;
  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-targets-'));
    mkdirSync(path.join(dir, 'public/.git'), { recursive: true });
    writeFileSync(path.join(dir, 'public/brochure.pdf'), '%PDF-1.4 demo');
    writeFileSync(path.join(dir, 'public/.env'), 'SECRET=1');
    writeFileSync(path.join(dir, 'public/.git/config'), '[core]');
    const config = LocalSchema.parse({
      port: 0,
      staticDir: 'public',
      dataDir: 'data',
      instances: [{ idInstance: ID, apiTokenInstance: TOKEN }],
    });
    local = await startLocal({ kind: 'http', dir, config });
    port = Number(new URL(local.url).port);
  });
  afterAll(() => local.close());

  const targets = [
    '//',
    '///',
    '/\\',
    '//:99999',
    '//[',
    '//[::1',
    '/a//b',
    '/\\\\evil.example',
    '\\',
    '*',
    'x',
    '?',
    '//?a=1',
    'http://[',
    'http://x:99999/',
    `/waInstance${ID}//getMessage`,
    '/%',
    '/%zz',
    `/waInstance${ID}/getMessage/${TOKEN}?%`,
    '/_local/static/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    '/%00',
    '/?__proto__=1&constructor=2',
  ];
  it.each(targets)('%s answers 4xx, never 500', async (target) => {
    const r = await raw(port, target);
    expect(r.status, `${target}: ${r.body}`).toBeGreaterThanOrEqual(400);
    expect(r.status, `${target}: ${r.body}`).toBeLessThan(500);
  });

  it('malformed targets are 400 with the reason', async () => {
    for (const t of ['//', '///', '/\\', '//:99999', '//[', '*']) {
      const r = await raw(port, t);
      expect(r.status, t).toBe(400);
      if (r.body) expect(r.body, t).toMatch(/bad request target|Bad Request/);
    }
  });

  it('admin and API routes are looked up without a prototype', async () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const admin = await raw(port, `/_local/waInstance${ID}/${name}/${TOKEN}`);
      expect(admin.status, name).toBe(404);
      expect(admin.body).not.toMatch(/function|Object/);
      const api = await raw(port, `/waInstance${ID}/${name}/${TOKEN}`);
      expect(api.status, name).toBe(404);
    }
    const ok = await raw(port, `/_local/waInstance${ID}/queue/${TOKEN}`);
    expect(ok.status).toBe(200);
  });

  it('/_local/static/ never serves dotfiles or dot-folders', async () => {
    expect((await raw(port, '/_local/static/brochure.pdf')).status).toBe(200);
    for (const p of ['.env', '.git/config', '%2eenv', '.git', '.']) {
      const r = await raw(port, `/_local/static/${p}`);
      expect(r.status, p).toBe(404);
      expect(r.body).not.toMatch(/SECRET|core/);
    }
  });

  it('a request the HTTP parser cannot read answers the JSON error shape with the reason', async () => {
    const cases: Array<[string | Buffer, number, string]> = [
      ['FOO / HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'malformed request: unknown HTTP method'],
      [
        `POST /waInstance${ID}/getChatHistory/${TOKEN} HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n`,
        400,
        'malformed request: invalid Content-Length header (one decimal number, with no Transfer-Encoding)',
      ],
      [
        Buffer.from('GET /_local/static/caf\xe9.pdf HTTP/1.1\r\nHost: x\r\n\r\n', 'latin1'),
        400,
        'malformed request: invalid request target: a space, control or non-ASCII byte (percent-encode it)',
      ],
    ];
    for (const [request, status, message] of cases) {
      const x = await rawExchange(port, [request]);
      expect(x.statuses, String(request)).toEqual([status]);
      expect(x.text).toMatch(/\r\ncontent-type: application\/json; charset=utf-8\r\n/);
      expect(JSON.parse(x.lastBody)).toEqual({ message });
    }
  });

  it('an absolute-form target naming another host is refused; one naming this service is served', async () => {
    const get = (target: string) => rawExchange(port, [`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`]);
    const evil = await get('http://evil.example/_local/static/brochure.pdf');
    expect(evil.statuses).toEqual([400]);
    expect(JSON.parse(evil.lastBody)).toEqual({
      message: 'bad request target: absolute URL for another host (evil.example): this service answers for its own address only',
    });
    expect(evil.text).not.toContain('%PDF');
    // Our port on another host, another port on our host: not this service either.
    expect((await get(`http://evil.example:${port}/_local/static/brochure.pdf`)).statuses).toEqual([400]);
    expect((await get(`http://127.0.0.1:${port + 1}/_local/static/brochure.pdf`)).statuses).toEqual([400]);
    for (const own of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
      const ok = await get(`${own}/_local/static/brochure.pdf`);
      expect(ok.statuses, own).toEqual([200]);
      expect(ok.lastBody).toBe('%PDF-1.4 demo');
    }
  });

  it('a valid request pipelined before garbage is answered first, then the error', async () => {
    const x = await rawExchange(port, ['GET /_local/static/brochure.pdf HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE GARBAGE\r\n\r\n']);
    expect(x.statuses).toEqual([200, 400]);
    expect(x.text).toContain('%PDF-1.4 demo');
    expect(JSON.parse(x.lastBody)).toEqual({ message: 'malformed request: unknown HTTP method' });
  });
});
