/**
 * The send queue tries a transient urlFile failure (503) again at the next
 * slot and sends the message once; a lasting one (404) fails at once.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/util/virtual-clock.js';
import { ALICE, startLocal, T0, type LocalUnderTest } from '../support/local-service.js';

describe('send queue: transient fetch failures are tried again', () => {
  let files: http.Server;
  let filesUrl: string;
  const hits: Record<string, number> = {};
  // The next slot comes as soon as the service waits for it.
  const clock = new VirtualClock(T0);
  let local: LocalUnderTest<VirtualClock>;
  beforeAll(async () => {
    files = http.createServer((req, res) => {
      const n = (hits[req.url!] = (hits[req.url!] ?? 0) + 1);
      // Connection: close — an idle kept-alive socket counts as work in flight to the VirtualClock.
      res.setHeader('connection', 'close');
      if (req.url === '/flaky.pdf' && n === 1) return void res.writeHead(503).end('busy');
      if (req.url === '/missing.pdf') return void res.writeHead(404).end('no');
      res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4 test');
    });
    await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
    filesUrl = `http://127.0.0.1:${(files.address() as { port: number }).port}`;
    clock.start();
    local = await startLocal({ kind: 'in-process', clock });
  });
  afterAll(async () => {
    await local.close();
    await clock.stop();
    await new Promise((r) => files.close(r));
  });

  it('a 503 is tried again at the next slot and the message is sent once; a 404 fails at once', async () => {
    const client = local.client;
    const flaky = await client.sendFileByUrl({ chatId: ALICE, urlFile: `${filesUrl}/flaky.pdf`, fileName: 'flaky.pdf' });
    expect(await local.settled(flaky.idMessage)).toBe('sent');
    expect(hits['/flaky.pdf']).toBe(2);
    expect((await client.getMessage({ chatId: ALICE, idMessage: flaky.idMessage })).fileName).toBe('flaky.pdf');

    const missing = await client.sendFileByUrl({ chatId: ALICE, urlFile: `${filesUrl}/missing.pdf`, fileName: 'missing.pdf' });
    expect(await local.settled(missing.idMessage)).toBe('failed');
    expect(hits['/missing.pdf']).toBe(1);
    // Kept in the journals as failed, not sent.
    expect((await client.getMessage({ chatId: ALICE, idMessage: missing.idMessage })).statusMessage).toBe('failed');
  });
});
