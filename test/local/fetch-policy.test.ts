/**
 * urlFile fetching: a slow or hostile link does
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
import { downloadToFile, FetchError, privateRange } from '../../src/local/media/download.js';
import { MAX_SEND_ATTEMPTS } from '../../src/local/instance/send-queue.js';
import type { Clock } from '../../src/util/clock.js';
import { VirtualClock } from '../../src/util/virtual-clock.js';
import { startFileServer, type FileServer } from '../support/file-server.js';
import { ALICE, localConfig, startLocal, T0, type LocalUnderTest } from '../support/local-service.js';
import { makePdf } from '../support/media.js';

let dir: string;
let files: FileServer;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'msgflow-fetch-'));
  files = await startFileServer({
    '/doc.pdf': { body: makePdf(), contentType: 'application/pdf' },
    '/slow.pdf': { hang: true },
    '/busy.pdf': { body: Buffer.from('busy'), status: 503 },
  });
});
afterAll(async () => {
  await files.close();
  await rm(dir, { recursive: true, force: true });
});

type Sender = { send(urlFile: string, fileName?: string): Promise<string> };

/** `h` with a send(urlFile) of sendFileByUrl that answers the idMessage. */
function withSend<H extends LocalUnderTest<Clock>>(h: H): H & Sender {
  return Object.assign(h, {
    async send(urlFile: string, fileName = 'f.pdf') {
      const r = await h.call('sendFileByUrl', { chatId: ALICE, urlFile, fileName });
      return (r.body as { idMessage: string }).idMessage;
    },
  });
}

/**
 * The service in-process with `local` over localConfig(), on a clock that
 * jumps to the send queue's next slot whenever the service waits for it (the
 * fetch deadlines stay real time). In-process: the VirtualClock counts an
 * open socket, such as a client's kept-alive one, as work in flight.
 */
async function service(local: Record<string, unknown>, name: string): Promise<LocalUnderTest<VirtualClock> & Sender> {
  const clock = new VirtualClock(T0);
  clock.start();
  const h = withSend(await startLocal({ kind: 'in-process', dir, clock, config: localConfig({ dataDir: `data-${name}`, ...local }) }));
  const close = h.close.bind(h);
  return Object.assign(h, {
    async close() {
      await close();
      await clock.stop();
    },
  });
}

describe('a slow or hostile urlFile does not hold the queue', () => {
  it('a fetch that misses its deadline moves the entry back: the next message goes; the slow one gives up after its attempts', async () => {
    const s = await service({ fetchTimeoutMs: 250 }, 'slow');
    try {
      const before = files.hits.filter((h) => h === '/slow.pdf').length;
      const slow = await s.send(files.url('/slow.pdf'), 'slow.pdf');
      const good = await s.send(files.url('/doc.pdf'), 'doc.pdf');
      await s.settled(slow);
      // The good one did not wait for every attempt of the slow one.
      expect(s.outcomes.map((x) => [x.idMessage, x.what])).toEqual([
        [good, 'sent'],
        [slow, 'failed'],
      ]);
      expect(s.outcomes[1]!.reason).toMatch(/slow\.pdf: no answer within 250 ms/);
      expect(files.hits.filter((h) => h === '/slow.pdf').length - before).toBe(MAX_SEND_ATTEMPTS);
    } finally {
      await s.close();
    }
  }, 30_000);
});

describe('local.fetch.allowPrivate', () => {
  it('is false by default: loopback targets are refused, by address and by name, and never contacted', async () => {
    // localConfig() allows 127.0.0.1 for the other tests; undefined leaves the schema's default.
    const s = await service({ fetch: undefined }, 'private');
    try {
      const before = files.hits.length;
      expect(await s.settled(await s.send(files.url('/doc.pdf')))).toBe('failed');
      expect(s.outcomes[0]!.reason).toMatch(
        /127\.0\.0\.1 resolves to 127\.0\.0\.1, a loopback address; set local\.fetch\.allowPrivate: true/,
      );
      await s.settled(await s.send(`${files.origin.replace('127.0.0.1', 'localhost')}/doc.pdf`));
      expect(s.outcomes[1]!.reason).toMatch(/localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
      expect(files.hits.length).toBe(before);
      // A refused address is lasting: one attempt, no retry.
      expect(s.outcomes).toHaveLength(2);
    } finally {
      await s.close();
    }
  }, 30_000);

  it("msgflow's own publicUrl and port are allowed: the brochure is served from /_local/static/", async () => {
    await mkdir(path.join(dir, 'public'), { recursive: true });
    await writeFile(path.join(dir, 'public', 'brochure.pdf'), makePdf());
    // Over HTTP: the service fetches from its own listener.
    const s = withSend(await startLocal({ dir, config: localConfig({ dataDir: 'data-own', staticDir: 'public', fetch: undefined }) }));
    try {
      // msgflow's own address stays allowed although 127.0.0.1 is refused otherwise.
      expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:/);
      expect(await s.settled(await s.send(`${s.url}/_local/static/brochure.pdf`, 'brochure.pdf'))).toBe('sent');
      const viaLocalhost = s.url.replace('127.0.0.1', 'localhost');
      const second = await s.send(`${viaLocalhost}/_local/static/brochure.pdf`, 'brochure.pdf');
      await s.clock.advance(500); // its slot in the send queue
      expect(await s.settled(second)).toBe('sent');
    } finally {
      await s.close();
    }
  }, 30_000);

  it('every redirect is checked: an allowed first hop that redirects to a private address is refused', async () => {
    const redirector = await startFileServer({
      '/by-address': { redirectTo: files.url('/doc.pdf') },
      '/by-name': { redirectTo: `${files.origin.replace('127.0.0.1', 'localhost')}/doc.pdf` },
    });
    const port = new URL(redirector.origin).port;
    try {
      const before = files.hits.length;
      for (const [i, p] of ['/by-address', '/by-name'].entries()) {
        const err = await downloadToFile(redirector.url(p), path.join(dir, `redirect-${i}`), {
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
      await redirector.close();
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
    expect(await fetchOnce(files.url('/busy.pdf'), 'a')).toMatchObject({ code: 'FILE_FETCH_STATUS', transient: true });
    expect(await fetchOnce(files.url('/nothing.pdf'), 'b')).toMatchObject({ code: 'FILE_FETCH_STATUS', transient: false });
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    expect(await fetchOnce(`http://127.0.0.1:${port}/x.pdf`, 'c')).toMatchObject({ code: 'FILE_FETCH_FAILED', transient: true });
  });
});
