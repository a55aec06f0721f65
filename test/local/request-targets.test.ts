/**
 * Hostile request lines and lookups (issue #9 item 9): any request-target
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
});
