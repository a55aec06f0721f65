/**
 * urlFile fetching (issue #9 item 8, issue #11): a slow or hostile link does
 * not hold the send queue, its attempts are bounded; loopback, private and
 * link-local targets are refused unless local.fetch.allowPrivate (after DNS
 * resolution and on every redirect), msgflow's own address excepted; whether a
 * failure is worth another try is a typed field of the error.
 */
import http from 'node:http';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSchema } from '../../src/local/config.js';
import { createLocalService, type LocalService } from '../../src/local/service.js';
import { downloadToFile, FetchError, privateRange } from '../../src/local/media/download.js';
import { MAX_SEND_ATTEMPTS } from '../../src/local/instance/send-queue.js';
import { startFileServer, type FileServer } from '../support/file-server.js';
import { makePdf } from './helpers/png.js';

const ID = '1101000001';
const TOKEN = 'fetch-test-token';
const CHAT = '79001112233@c.us';

let dir: string;
let files: FileServer;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'msgflow-fetch-'));
  files = await startFileServer({
    '/doc.pdf': { body: makePdf(), contentType: 'application/pdf' },
    '/slow.pdf': { body: makePdf(), contentType: 'application/pdf', hang: true },
    '/busy.pdf': { body: Buffer.from('busy'), status: 503 },
  });
});
afterAll(async () => {
  await files.close();
  await rm(dir, { recursive: true, force: true });
});

async function service(local: Record<string, unknown>, name: string): Promise<{ s: LocalService; url: string; close(): Promise<void> }> {
  const config = LocalSchema.parse({
    port: 0,
    dataDir: `data-${name}`,
    network: { accounts: [{ phone: 79001112233 }], deliveredAfterMs: 0 },
    instances: [{ idInstance: ID, apiTokenInstance: TOKEN, sendIntervalMs: 500, rateLimits: { sendFileByUrl: 0, getChatHistory: 0 } }],
    ...local,
  });
  const s = createLocalService(config, { baseDir: dir });
  await s.start();
  const l = await s.listen(0, '127.0.0.1');
  return { s, url: l.url, close: () => s.close() };
}

function send(s: LocalService, urlFile: string, fileName = 'f.pdf'): Promise<string> {
  return s
    .handle({
      httpMethod: 'POST',
      path: `/waInstance${ID}/sendFileByUrl/${TOKEN}`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chatId: CHAT, urlFile, fileName }),
    })
    .then((r) => (r.body as { idMessage: string }).idMessage);
}

function outcomes(s: LocalService) {
  const seen: { id: string; what: 'sent' | 'failed'; reason?: string }[] = [];
  const waiters = new Map<string, () => void>();
  const note = (id: string, what: 'sent' | 'failed', reason?: string) => {
    seen.push({ id, what, reason });
    waiters.get(id)?.();
  };
  s.events.on('queue:sent', (e) => note(e.idMessage, 'sent'));
  s.events.on('queue:failed', (e) => note(e.idMessage, 'failed', e.reason));
  return {
    seen,
    settled: (id: string) =>
      new Promise<(typeof seen)[number]>((resolve) => {
        const done = () => resolve(seen.find((x) => x.id === id)!);
        if (seen.some((x) => x.id === id)) done();
        else waiters.set(id, done);
      }),
  };
}

describe('a slow or hostile urlFile does not hold the queue', () => {
  it('a fetch that misses its deadline moves the entry back: the next message goes; the slow one gives up after its attempts', async () => {
    const { s, close } = await service({ fetchTimeoutMs: 700, fetch: { allowPrivate: true } }, 'slow');
    try {
      const o = outcomes(s);
      const before = files.hits.filter((h) => h === '/slow.pdf').length;
      const slow = await send(s, `${files.url}/slow.pdf`, 'slow.pdf');
      const good = await send(s, `${files.url}/doc.pdf`, 'doc.pdf');
      const slowDone = await o.settled(slow);
      // The good one did not wait for every attempt of the slow one.
      expect(o.seen.map((x) => [x.id, x.what])).toEqual([
        [good, 'sent'],
        [slow, 'failed'],
      ]);
      expect(slowDone.reason).toMatch(/slow\.pdf: no answer within 700 ms/);
      expect(files.hits.filter((h) => h === '/slow.pdf').length - before).toBe(MAX_SEND_ATTEMPTS);
    } finally {
      await close();
    }
  }, 30_000);
});

describe('local.fetch.allowPrivate', () => {
  it('is false by default: loopback targets are refused, by address and by name, and never contacted', async () => {
    const { s, url, close } = await service({}, 'private');
    try {
      const o = outcomes(s);
      const before = files.hits.length;
      const byAddress = await o.settled(await send(s, `${files.url}/doc.pdf`));
      expect(byAddress).toMatchObject({ what: 'failed' });
      expect(byAddress.reason).toMatch(/127\.0\.0\.1 resolves to 127\.0\.0\.1, a loopback address; set local\.fetch\.allowPrivate: true/);
      const byName = await o.settled(await send(s, `${files.url.replace('127.0.0.1', 'localhost')}/doc.pdf`));
      expect(byName.reason).toMatch(/localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
      expect(files.hits.length).toBe(before);
      // A refused address is lasting: one attempt, no retry.
      expect(o.seen).toHaveLength(2);
      // msgflow's own address stays allowed (the demo brochure under /_local/static/).
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:/);
    } finally {
      await close();
    }
  }, 30_000);

  it("msgflow's own publicUrl and port are allowed: the brochure is served from /_local/static/", async () => {
    await mkdir(path.join(dir, 'public'), { recursive: true });
    await writeFile(path.join(dir, 'public', 'brochure.pdf'), makePdf());
    const { s, url, close } = await service({ staticDir: 'public' }, 'own');
    try {
      const o = outcomes(s);
      expect(await o.settled(await send(s, `${url}/_local/static/brochure.pdf`, 'brochure.pdf'))).toMatchObject({ what: 'sent' });
      const viaLocalhost = url.replace('127.0.0.1', 'localhost');
      expect(await o.settled(await send(s, `${viaLocalhost}/_local/static/brochure.pdf`, 'brochure.pdf'))).toMatchObject({ what: 'sent' });
    } finally {
      await close();
    }
  }, 30_000);

  it('every redirect is checked: an allowed first hop that redirects to a private address is refused', async () => {
    const redirector = http.createServer((req, res) => {
      const to = req.url === '/by-name' ? files.url.replace('127.0.0.1', 'localhost') : files.url;
      res.writeHead(302, { location: `${to}/doc.pdf` }).end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
    const port = String((redirector.address() as { port: number }).port);
    try {
      const before = files.hits.length;
      for (const [i, p] of ['/by-address', '/by-name'].entries()) {
        const err = await downloadToFile(`http://127.0.0.1:${port}${p}`, path.join(dir, `redirect-${i}`), {
          maxBytes: 1e6,
          timeoutMs: 5000,
          maxRedirects: 3,
          allowPrivate: false,
          // The redirector stands for a public host (its first hop is allowed).
          isOwn: (u) => u.port === port,
        }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(FetchError);
        expect((err as FetchError).code).toBe('FILE_FETCH_PRIVATE');
        expect((err as FetchError).transient).toBe(false);
      }
      expect(files.hits.length).toBe(before);
    } finally {
      redirector.close();
    }
  });

  it('names the ranges: loopback, private, link-local, IPv4-mapped IPv6; public addresses pass', () => {
    expect(privateRange('127.0.0.1')).toBe('loopback');
    expect(privateRange('::1')).toBe('loopback');
    expect(privateRange('10.1.2.3')).toBe('private');
    expect(privateRange('172.20.0.1')).toBe('private');
    expect(privateRange('192.168.1.1')).toBe('private');
    expect(privateRange('fd00::1')).toBe('private');
    expect(privateRange('169.254.169.254')).toBe('link-local');
    expect(privateRange('fe80::1')).toBe('link-local');
    expect(privateRange('::ffff:127.0.0.1')).toBe('loopback');
    expect(privateRange('0.0.0.0')).toBe('unspecified');
    expect(privateRange('93.184.216.34')).toBeUndefined();
    expect(privateRange('2606:2800:220:1::1')).toBeUndefined();
    expect(privateRange('example.com')).toBeUndefined();
  });
});

describe('transient or lasting is a typed field of the error, not read from its message', () => {
  const fetchOnce = (url: string, i: string) =>
    downloadToFile(url, path.join(dir, `t-${i}`), { maxBytes: 1e6, timeoutMs: 3000, maxRedirects: 0, allowPrivate: true }).then(
      () => undefined,
      (e: unknown) => e as FetchError,
    );
  it('503 and a refused connection are transient; 404 and too many redirects are not', async () => {
    expect(await fetchOnce(`${files.url}/busy.pdf`, 'a')).toMatchObject({ code: 'FILE_FETCH_STATUS', transient: true });
    expect(await fetchOnce(`${files.url}/nothing.pdf`, 'b')).toMatchObject({ code: 'FILE_FETCH_STATUS', transient: false });
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    expect(await fetchOnce(`http://127.0.0.1:${port}/x.pdf`, 'c')).toMatchObject({ code: 'FILE_FETCH_FAILED', transient: true });
  });
});
