/**
 * The status methods of @green-api/whatsapp-api-client-js-v2, driven through
 * that package against `msgflow serve` as its users would (only its axios
 * base URL changed): each answers with its documented shape, and a posted
 * status reaches its participant on the network's timings.
 */
import { GreenApiClient } from '@green-api/whatsapp-api-client-js-v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServeHandle } from '../../src/runtime/serve.js';
import { serveForOfficialClient, type OfficialClient } from '../support/green-api.js';
import { startFileServer, type FileServer } from '../support/file-server.js';
import { A, ALICE, BOB } from '../support/local-service.js';
import { makePng } from '../support/media.js';
import { networkYaml } from '../support/network.js';
import { waitFor } from '../support/wait.js';

let served: ServeHandle;
let files: FileServer;
let client: GreenApiClient;
let h: OfficialClient;

beforeAll(async () => {
  files = await startFileServer({
    '/story.png': { body: makePng(90, 160), contentType: 'image/png' },
    '/voice.mp3': { body: Buffer.from('ID3\u0003\u0000\u0000\u0000\u0000\u0000\u0000voice'), contentType: 'audio/mpeg' },
  });
  h = await serveForOfficialClient({
    name: 'statuses',
    local: ['  fetch: { allowPrivate: true }', networkYaml('  ', { deliveredAfterMs: 100 })],
    instance: [
      // The test polls faster than the published 1-10 requests/second.
      '      rateLimits: { getStatusStatistic: 0, getOutgoingStatuses: 0, getIncomingStatuses: 0 }',
    ],
  });
  ({ client, served } = h);
});

afterAll(async () => {
  await files?.close();
  await h?.close();
});

describe('@green-api/whatsapp-api-client-js-v2 status methods against msgflow serve', () => {
  it('sendTextStatus, then getStatusStatistic as the participant sees it, getOutgoingStatuses, deleteStatus', async () => {
    const { idMessage } = await client.sendTextStatus({
      message: 'I use GREEN-API',
      backgroundColor: '#228B22',
      font: 'SERIF',
      participants: [ALICE],
    });
    expect(idMessage).toMatch(/^[0-9A-F]{32}$/);
    const seen = await waitFor('the status to reach Alice', async () => {
      const s = await client.getStatusStatistic({ idMessage });
      return s[0]?.status === 'delivered' ? s : undefined;
    });
    expect(seen).toEqual([{ participant: ALICE, timestamp: expect.any(Number), status: 'delivered' }]);
    const [out] = await client.getOutgoingStatuses({ minutes: 60 });
    expect(out).toMatchObject({
      type: 'outgoing',
      idMessage,
      typeMessage: 'extendedTextMessage',
      textMessage: 'I use GREEN-API',
      extendedTextMessage: { text: 'I use GREEN-API', backgroundColor: '#228B22', font: 'SERIF', participants: [ALICE] },
      statusMessage: 'delivered',
      sendByApi: true,
    });
    await expect(client.deleteStatus({ idMessage })).resolves.toBeUndefined();
    expect((await client.getOutgoingStatuses()).map((s) => s.idMessage)).not.toContain(idMessage);
    await expect(client.getStatusStatistic({ idMessage })).rejects.toThrow(/status code 400\. \{"message":"ID message notfound"\}/);
  });

  it('sendMediaStatus and sendVoiceStatus answer an idMessage; the journal has their files', async () => {
    const pic = await client.sendMediaStatus({ urlFile: files.url('/story.png'), fileName: 'story.png', caption: 'look' });
    const voice = await client.sendVoiceStatus({ urlFile: files.url('/voice.mp3'), fileName: 'voice.mp3', participants: [BOB] });
    const byId = new Map((await client.getOutgoingStatuses()).map((s) => [s.idMessage, s]));
    expect(byId.get(pic.idMessage)).toMatchObject({ typeMessage: 'imageMessage', caption: 'look', mimeType: 'image/png' });
    expect(byId.get(voice.idMessage)).toMatchObject({ typeMessage: 'audioMessage', mimeType: 'audio/mpeg', participants: [BOB] });
  });

  it("getIncomingStatuses lists a contact's status", async () => {
    await client.addContact({ chatId: BOB, firstName: 'Bob' });
    const r = await fetch(`${served.url}/_local/waInstance${A.idInstance}/status/${A.apiTokenInstance}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chatId: BOB, message: 'from Bob' }),
    });
    expect(r.status).toBe(200);
    const [st] = await client.getIncomingStatuses();
    expect(st).toMatchObject({
      type: 'incoming',
      typeMessage: 'extendedTextMessage',
      chatId: BOB,
      senderId: BOB,
      senderName: 'Bob',
      senderContactName: 'Bob',
      textMessage: 'from Bob',
      extendedTextMessage: { text: 'from Bob', backgroundColor: '#000000' },
    });
  });
});
