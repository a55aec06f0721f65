import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { LocalSchema } from '../../src/local/config.js';
import { createLocalService, type LocalService } from '../../src/local/service.js';
import { createInProcessTransport } from '../../src/runtime/in-process-transport.js';

const ID = '1101000001';
const TOKEN = 'retry-test-token';
const CHAT = '79001112233@c.us';

describe('send queue: transient fetch failures are tried again', () => {
  let files: http.Server;
  let filesUrl: string;
  const hits: Record<string, number> = {};
  let service: LocalService;
  beforeAll(async () => {
    files = http.createServer((req, res) => {
      const n = (hits[req.url!] = (hits[req.url!] ?? 0) + 1);
      if (req.url === '/flaky.pdf' && n === 1) return void res.writeHead(503).end('busy');
      if (req.url === '/missing.pdf') return void res.writeHead(404).end('no');
      res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4 test');
    });
    await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
    filesUrl = `http://127.0.0.1:${(files.address() as { port: number }).port}`;
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-retry-'));
    const config = LocalSchema.parse({
      dataDir: 'data',
      fetch: { allowPrivate: true },
      network: { accounts: [{ phone: 79001112233 }], deliveredAfterMs: 0 },
      instances: [{ idInstance: ID, apiTokenInstance: TOKEN, sendIntervalMs: 500, rateLimits: { getMessage: 0 } }],
    });
    service = createLocalService(config, { baseDir: dir });
    await service.start();
  });
  afterAll(async () => {
    await service.close();
    await new Promise((r) => files.close(r));
  });

  const settled = (id: string) =>
    new Promise<'sent' | 'failed'>((resolve) => {
      service.events.on('queue:sent', (e: { idMessage: string }) => e.idMessage === id && resolve('sent'));
      service.events.on('queue:failed', (e: { idMessage: string }) => e.idMessage === id && resolve('failed'));
    });

  it('a 503 is tried again at the next slot and the message is sent once; a 404 fails at once', async () => {
    const client = createClient({
      transport: createInProcessTransport(service, ID, TOKEN),
      idInstance: ID,
      apiTokenInstance: TOKEN,
      rateLimit: false,
    });
    const flaky = await client.sendFileByUrl({ chatId: CHAT, urlFile: `${filesUrl}/flaky.pdf`, fileName: 'flaky.pdf' });
    expect(await settled(flaky.idMessage)).toBe('sent');
    expect(hits['/flaky.pdf']).toBe(2);
    expect((await client.getMessage({ chatId: CHAT, idMessage: flaky.idMessage })).fileName).toBe('flaky.pdf');

    const missing = await client.sendFileByUrl({ chatId: CHAT, urlFile: `${filesUrl}/missing.pdf`, fileName: 'missing.pdf' });
    expect(await settled(missing.idMessage)).toBe('failed');
    expect(hits['/missing.pdf']).toBe(1);
    await expect(client.getMessage({ chatId: CHAT, idMessage: missing.idMessage })).rejects.toThrow(/Message not found by id/);
  });
});
