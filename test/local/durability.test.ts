/**
 * What was acknowledged survives kill -9: queued messages are sent after the
 * restart exactly once, contacts stay added. The first test kills a real
 * `msgflow serve` child process mid-queue; the others put the files in the
 * exact states a crash can leave and check the restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { networkYaml } from '../support/network.js';
import { waitFor } from '../support/wait.js';
import type { Message } from '../../src/api/types.js';
import { startFileServer, type FileServer } from '../support/file-server.js';
import { A, ALICE, BOB, conformanceConfig, startLocal } from '../support/local-service.js';
import { makePdf } from './helpers/png.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CHILD = path.join(here, 'fixtures', 'serve-child.ts');

function startChild(config: string): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, config], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`child did not start: ${err}`)), 30_000);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]! });
      }
    });
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`child exited with ${code}: ${err}`));
    });
  });
}

function kill9(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

async function api(url: string, method: string, body?: unknown): Promise<any> {
  const res = await fetch(`${url}/waInstance${A.idInstance}/${method}/${A.apiTokenInstance}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

describe('kill -9 during a queued send', () => {
  let files: FileServer;
  let dir: string;
  beforeAll(async () => {
    files = await startFileServer({ '/doc.pdf': { body: makePdf(), contentType: 'application/pdf' } });
    dir = await mkdtemp(path.join(tmpdir(), 'msgflow-kill-'));
  });
  afterAll(async () => {
    await files.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('every acknowledged message is in history exactly once after the restart; contacts stay', async () => {
    const config = path.join(dir, 'config.yaml');
    // A config holding only a local: section is enough for msgflow serve.
    await writeFile(
      config,
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
        '',
      ].join('\n'),
    );
    let { child, url } = await startChild(config);
    expect((await api(url, 'addContact', { chatId: BOB, firstName: 'Bob' })).body).toEqual({ addContact: true });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await api(url, 'sendFileByUrl', { chatId: ALICE, urlFile: `${files.url}/doc.pdf`, fileName: `f${i}.pdf` });
      expect(r.status).toBe(200);
      ids.push(r.body.idMessage);
    }
    // Kill once the queue is part-way through.
    await waitFor('two messages sent', async () => {
      const h = (await api(url, 'getChatHistory', { chatId: ALICE })).body as Message[];
      return h.length >= 2 ? true : undefined;
    });
    await kill9(child);

    ({ child, url } = await startChild(config));
    try {
      const history = await waitFor('all six sent', async () => {
        const h = (await api(url, 'getChatHistory', { chatId: ALICE })).body as Message[];
        return h.length >= 6 ? h : undefined;
      });
      // Give a duplicate a chance to appear before counting.
      await new Promise((r) => setTimeout(r, 700));
      const final = (await api(url, 'getChatHistory', { chatId: ALICE })).body as Message[];
      expect(final.length).toBe(history.length);
      expect(final.map((m) => m.idMessage).sort()).toEqual([...ids].sort());
      expect((await api(url, 'lastOutgoingMessages')).body).toHaveLength(6);
      expect((await api(url, 'addContact', { chatId: BOB, firstName: 'Bob' })).body).toEqual({ message: `Contact ${BOB} already exists` });
    } finally {
      await kill9(child);
    }
  }, 60_000);
});

describe('kill -9 with notifications waiting', () => {
  it('queued notifications survive, deleted ones stay deleted, receiptIds go on', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-kill-notify-'));
    const config = path.join(dir, 'config.yaml');
    await writeFile(
      config,
      [
        'local:',
        '  port: 0',
        '  dataDir: data',
        '  network:',
        '    accounts:',
        '      - { phone: 79001112233, name: Alice }',
        '  instances:',
        `    - idInstance: "${A.idInstance}"`,
        `      apiTokenInstance: "${A.apiTokenInstance}"`,
        '      settings: { incomingWebhook: "yes" }',
        '      rateLimits: { receiveNotification: 0, deleteNotification: 0 }',
        '',
      ].join('\n'),
    );
    let { child, url } = await startChild(config);
    try {
      for (const text of ['a', 'b', 'c']) {
        const res = await fetch(`${url}/_local/waInstance${A.idInstance}/incoming/${A.apiTokenInstance}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ chatId: ALICE, typeMessage: 'textMessage', textMessage: text }),
        });
        expect(res.status).toBe(200);
      }
      const first = (await api(url, 'receiveNotification')).body;
      expect(first.body.messageData.textMessageData.textMessage).toBe('a');
      const deleted = await fetch(`${url}/waInstance${A.idInstance}/deleteNotification/${A.apiTokenInstance}/${first.receiptId}`, {
        method: 'DELETE',
      });
      expect(await deleted.json()).toEqual({ result: true });
      await kill9(child);
      ({ child, url } = await startChild(config));
      const texts: string[] = [];
      const ids: number[] = [];
      for (;;) {
        const n = (await api(url, 'receiveNotification')).body;
        if (n === null) break;
        texts.push(n.body.messageData.textMessageData.textMessage);
        ids.push(n.receiptId);
        expect(
          (await fetch(`${url}/waInstance${A.idInstance}/deleteNotification/${A.apiTokenInstance}/${n.receiptId}`, { method: 'DELETE' }))
            .status,
        ).toBe(200);
      }
      expect(texts).toEqual(['b', 'c']);
      expect(ids.every((id) => id > first.receiptId)).toBe(true);
    } finally {
      await kill9(child);
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('restart from the states a crash can leave', () => {
  it('released and appended to history, but "done" not recorded: not sent again', async () => {
    const files = await startFileServer({ '/doc.pdf': { body: makePdf(), contentType: 'application/pdf' } });
    const h = await startLocal({ kind: 'in-process', config: conformanceConfig() });
    try {
      const r = await h.call('sendFileByUrl', { chatId: ALICE, urlFile: `${files.url}/doc.pdf`, fileName: 'a.pdf' });
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
    const files = await startFileServer({ '/slow.pdf': { body: makePdf(), contentType: 'application/pdf', hang: true } });
    const h = await startLocal({ kind: 'in-process', config: conformanceConfig() });
    try {
      const r = await h.call('sendFileByUrl', { chatId: ALICE, urlFile: `${files.url}/slow.pdf`, fileName: 's.pdf' });
      const id = (r.body as { idMessage: string }).idMessage;
      for (let i = 0; i < 200 && !files.hits.includes('/slow.pdf'); i++) await new Promise((res) => setTimeout(res, 10));
      expect(files.hits).toContain('/slow.pdf');
      files.files.set('/slow.pdf', { body: makePdf(), contentType: 'application/pdf' });
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
