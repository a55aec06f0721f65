/**
 * Polling a service that holds a notification nested thousands deep: it is
 * deleted with a warning naming the limit, never handed on (where it would
 * fail) and received again forever.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { pollNotifications } from '../../src/runtime/notifications/poll.js';
import { systemClock } from '../../src/util/clock.js';
import { startFileServer, type FileServer } from '../support/file-server.js';
import { waitFor } from '../support/wait.js';

const ID = '1101000555';
const TOKEN = 'poll-poison-token-1';

let files: FileServer | undefined;
afterEach(async () => {
  await files?.close();
  files = undefined;
});

describe('polling notifications', () => {
  it('deletes a notification nested 5,000 deep with a warning instead of failing on it forever', async () => {
    const deep = `{"receiptId":7,"body":{"typeWebhook":"incomingMessageReceived","timestamp":1767225600,"x":${'['.repeat(5000)}${']'.repeat(5000)}}}`;
    const receive = `/waInstance${ID}/receiveNotification/${TOKEN}`;
    const del = `/waInstance${ID}/deleteNotification/${TOKEN}/7`;
    files = await startFileServer({
      [receive]: { body: Buffer.from(deep), contentType: 'application/json' },
      [del]: { body: Buffer.from('{"result":true}'), contentType: 'application/json' },
    });
    const client = createClient({ apiUrl: files.origin, idInstance: ID, apiTokenInstance: TOKEN });
    const warnings: string[] = [];
    const handled: unknown[] = [];
    const ac = new AbortController();
    const loop = pollNotifications({
      instance: 'default',
      client,
      // What the daemon's dispatcher does with a body first: hash and store it (both walk it).
      handle: async (_name, body) => handled.push(JSON.stringify(body)),
      signal: ac.signal,
      clock: systemClock,
      logger: { debug() {}, info() {}, warn: (m) => warnings.push(m), error() {} },
      receiveTimeout: 5,
    });
    try {
      await waitFor('the notification to be deleted', () => files!.hits.includes(del), { context: () => warnings.join('\n') });
    } finally {
      ac.abort();
      await loop;
      await client.close();
    }
    expect(handled).toEqual([]);
    expect(warnings[0]).toBe(
      'notification 7 of default is nested more than 64 levels deep, the most a request body may be: deleted without effect',
    );
  });
});
