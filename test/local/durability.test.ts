/**
 * What was acknowledged survives kill -9: queued messages are sent after the
 * restart exactly once, contacts stay added, queued notifications stay
 * queued. The first block kills a real `msgflow serve` process (one process,
 * one kill, one restart for both instances' checks: the start-ups are most of
 * its time); the others put the files in the exact states a crash can leave
 * and check the restart.
 */
import { appendFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { networkYaml } from '../support/network.js';
import { waitFor } from '../support/wait.js';
import { spawnCli, type Proc } from '../support/spawn.js';
import type { Message } from '../../src/api/types.js';
import { startFileServer, type FileServer } from '../support/file-server.js';
import { A, ALICE, B, BOB, conformanceConfig, startLocal } from '../support/local-service.js';
import { makePdf } from '../support/media.js';

type Who = { idInstance: string; apiTokenInstance: string };

async function api(url: string, method: string, body?: unknown, who: Who = A): Promise<any> {
  const res = await fetch(`${url}/waInstance${who.idInstance}/${method}/${who.apiTokenInstance}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** An incoming message on instance B (which queues a notification for it). */
async function incoming(url: string, text: string) {
  const res = await fetch(`${url}/_local/waInstance${B.idInstance}/incoming/${B.apiTokenInstance}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chatId: ALICE, typeMessage: 'textMessage', textMessage: text }),
  });
  expect(res.status).toBe(200);
}

const deleteNotification = (url: string, receiptId: number) =>
  fetch(`${url}/waInstance${B.idInstance}/deleteNotification/${B.apiTokenInstance}/${receiptId}`, { method: 'DELETE' });

describe('kill -9 of msgflow serve', () => {
  let files: FileServer;
  let dir: string;
  let serve: Proc;
  let url: string;
  const start = async () => {
    serve = spawnCli(['serve', '--config', 'config.yaml', '--port', '0'], dir);
    url = (await serve.waitForOutput(/listening on (http:\/\/\S+)/))[1]!;
  };
  /** Instance A: files queued when the kill came. */
  const ids: string[] = [];
  /** Instance B: the notification received and deleted before the kill. */
  let first: { receiptId: number; body: any };

  beforeAll(async () => {
    files = await startFileServer({ '/doc.pdf': { body: makePdf(), contentType: 'application/pdf' } });
    dir = await mkdtemp(path.join(tmpdir(), 'msgflow-kill-'));
    // A config holding only a local: section is enough for msgflow serve.
    await writeFile(
      path.join(dir, 'config.yaml'),
      [
        'local:',
        '  port: 0',
        '  dataDir: data',
        '  fetch: { allowPrivate: true }',
        networkYaml('  '),
        '  instances:',
        `    - idInstance: "${A.idInstance}"`,
        `      apiTokenInstance: "${A.apiTokenInstance}"`,
        '      sendIntervalMs: 500',
        '      rateLimits: { sendFileByUrl: 0, getChatHistory: 0, lastOutgoingMessages: 0 }',
        `    - idInstance: "${B.idInstance}"`,
        `      apiTokenInstance: "${B.apiTokenInstance}"`,
        '      settings: { incomingWebhook: "yes" }',
        '      rateLimits: { receiveNotification: 0, deleteNotification: 0 }',
        '',
      ].join('\n'),
    );
    await start();
    expect((await api(url, 'addContact', { chatId: BOB, firstName: 'Bob' })).body).toEqual({ addContact: true });
    for (let i = 0; i < 6; i++) {
      const r = await api(url, 'sendFileByUrl', { chatId: ALICE, urlFile: files.url('/doc.pdf'), fileName: `f${i}.pdf` });
      expect(r.status).toBe(200);
      ids.push(r.body.idMessage);
    }
    for (const text of ['a', 'b', 'c']) await incoming(url, text);
    first = (await api(url, 'receiveNotification', undefined, B)).body;
    expect(first.body.messageData.textMessageData.textMessage).toBe('a');
    expect(await (await deleteNotification(url, first.receiptId)).json()).toEqual({ result: true });
    // Kill once the queue is part-way through.
    await waitFor('two messages sent', async () => {
      const h = (await api(url, 'getChatHistory', { chatId: ALICE })).body as Message[];
      return h.length >= 2 ? true : undefined;
    });
    await serve.kill();
    await start();
  }, 180_000);
  afterAll(async () => {
    await serve?.kill();
    await files?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('every acknowledged message is in history exactly once after the restart; contacts stay', async () => {
    const history = await waitFor('all six sent', async () => {
      const h = (await api(url, 'getChatHistory', { chatId: ALICE })).body as Message[];
      return h.length >= 6 ? h : undefined;
    });
    // A duplicate would be sent from the queue: once it holds nothing, none can appear any more.
    await waitFor(
      'the send queue to empty',
      async () => (await (await fetch(`${url}/_local/waInstance${A.idInstance}/queue/${A.apiTokenInstance}`)).json()).pending.length === 0,
    );
    const final = (await api(url, 'getChatHistory', { chatId: ALICE })).body as Message[];
    expect(final.length).toBe(history.length);
    expect(final.map((m) => m.idMessage).sort()).toEqual([...ids].sort());
    expect((await api(url, 'lastOutgoingMessages')).body).toHaveLength(6);
    expect((await api(url, 'addContact', { chatId: BOB, firstName: 'Bob' })).body).toEqual({ message: `Contact ${BOB} already exists` });
  });

  it('queued notifications survive, deleted ones stay deleted, receiptIds go on', async () => {
    // Notifications come first in, first out: everything queued before the
    // restart is received before this one (waiting for a null instead would
    // cost receiveTimeout, at least 5 s).
    await incoming(url, 'after the restart');
    const texts: string[] = [];
    const receipts: number[] = [];
    while (texts.at(-1) !== 'after the restart') {
      const n = (await api(url, 'receiveNotification', undefined, B)).body;
      expect(n).not.toBeNull();
      texts.push(n.body.messageData.textMessageData.textMessage);
      receipts.push(n.receiptId);
      expect((await deleteNotification(url, n.receiptId)).status).toBe(200);
    }
    expect(texts).toEqual(['b', 'c', 'after the restart']);
    expect(receipts.every((id) => id > first.receiptId)).toBe(true);
  });
});

describe('restart from the states a crash can leave', () => {
  it('released and appended to history, but "done" not recorded: not sent again', async () => {
    const files = await startFileServer({ '/doc.pdf': { body: makePdf(), contentType: 'application/pdf' } });
    const h = await startLocal({ kind: 'in-process', config: conformanceConfig() });
    try {
      const r = await h.call('sendFileByUrl', { chatId: ALICE, urlFile: files.url('/doc.pdf'), fileName: 'a.pdf' });
      const id = (r.body as { idMessage: string }).idMessage;
      await h.settled(id);
      const queueFile = path.join(h.service.dataDir, A.idInstance, 'queue.jsonl');
      // Rewind the queue to "enqueued only", as if the process died right after the history append.
      const lines = (await readFile(queueFile, 'utf8')).trim().split('\n');
      expect(lines.map((l) => JSON.parse(l).op)).toEqual(['enqueue', 'done']);
      await writeFile(queueFile, lines[0] + '\n');
      await h.restart();
      await h.settled(id);
      await h.clock.advance(5000);
      const hist = (await h.call('getChatHistory', { chatId: ALICE })).body as Message[];
      expect(hist.map((m) => m.idMessage)).toEqual([id]);
      expect(files.hits.filter((x) => x === '/doc.pdf')).toHaveLength(1); // not even fetched again
      expect((await h.admin('queue')).body.pending).toEqual([]);
    } finally {
      await h.close();
      await files.close();
    }
  });

  it('a torn last line (killed mid-append) is dropped and later appends stay readable', async () => {
    const h = await startLocal({ kind: 'in-process', config: conformanceConfig() });
    try {
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'one' });
      const chats = path.join(h.service.dataDir, A.idInstance, 'chats');
      const [file] = await readdir(chats);
      await appendFile(path.join(chats, file!), '{"message":{"type":"incom');
      await h.restart();
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'two' });
      await h.restart();
      const hist = (await h.call('getChatHistory', { chatId: ALICE })).body as Message[];
      expect(hist.map((m) => m.textMessage)).toEqual(['two', 'one']);
    } finally {
      await h.close();
    }
  });

  it('a shutdown in the middle of a fetch is not a failure: the message is sent after the restart', async () => {
    const files = await startFileServer({ '/slow.pdf': { hang: true } });
    const h = await startLocal({ kind: 'in-process', config: conformanceConfig() });
    try {
      const r = await h.call('sendFileByUrl', { chatId: ALICE, urlFile: files.url('/slow.pdf'), fileName: 's.pdf' });
      const id = (r.body as { idMessage: string }).idMessage;
      await waitFor('the fetch to start', () => files.hits.includes('/slow.pdf'));
      expect(files.hits).toContain('/slow.pdf');
      files.routes.set('/slow.pdf', { body: makePdf(), contentType: 'application/pdf' });
      await h.restart(); // aborts the hanging fetch
      expect(await h.settled(id)).toBe('sent');
      expect((await h.admin('queue')).body.failed).toEqual([]);
      const hist = (await h.call('getChatHistory', { chatId: ALICE })).body as Message[];
      expect(hist.map((m) => m.idMessage)).toEqual([id]);
    } finally {
      await h.close();
      await files.close();
    }
  });
});
