import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalInstance } from '../../src/local/instance/instance.js';
import { createMediaStore } from '../../src/local/media/file-store.js';
import { Network } from '../../src/local/network.js';
import { validateRequest } from '../../src/api/validate.js';
import { ManualClock } from '../../src/util/clock.js';
import { A, ALICE, T0, localConfig } from '../support/local-service.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function openInstance(): Promise<{ inst: LocalInstance; clock: ManualClock }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'msgflow-instance-'));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const config = localConfig({}, { state: 'authorized' });
  const clock = new ManualClock(T0);
  const media = createMediaStore({
    dir: path.join(dataDir, 'files'),
    clock,
    maxBytes: 1024,
    timeoutMs: 1000,
    maxRedirects: 0,
    retentionMs: 1000,
  });
  cleanups.push(() => media.close());
  const inst = await LocalInstance.open(config.instances[0]!, {
    dataDir,
    network: new Network(config.network),
    clock,
    media,
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    publicUrl: () => 'http://127.0.0.1:7070',
  });
  cleanups.push(() => inst.close());
  return { inst, clock };
}

describe('a local instance, as open() returns it', () => {
  it('is whole: it answers at once, and its send queue is running', async () => {
    const { inst, clock } = await openInstance();
    expect(await inst.call('getStateInstance', validateRequest('getStateInstance', {}))).toEqual({
      status: 200,
      body: { stateInstance: 'authorized' },
    });
    const sent = await inst.call('sendMessage', validateRequest('sendMessage', { chatId: ALICE, message: 'hello' }));
    const { idMessage } = sent.body as { idMessage: string };
    const gone = new Promise((resolve) => inst.sendQueue.on('sent', (e) => e.idMessage === idMessage && resolve(e)));
    await clock.advance(1000);
    await gone;
    const got = await inst.call('getMessage', validateRequest('getMessage', { chatId: ALICE, idMessage }));
    expect(got.body).toMatchObject({ idMessage, textMessage: 'hello', type: 'outgoing' });
  });

  it('accepts its own token and no other', async () => {
    const { inst } = await openInstance();
    expect(inst.acceptsToken(A.apiTokenInstance)).toBe(true);
    expect(inst.acceptsToken(`${A.apiTokenInstance}x`)).toBe(false);
    expect(inst.acceptsToken('')).toBe(false);
  });
});
