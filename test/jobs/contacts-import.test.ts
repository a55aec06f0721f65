import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { contactsImport } from '../../src/actions/contacts-import.js';
import { createActionTestContext, runAction } from '../../src/actions/testing.js';
import { createClient } from '../../src/client/client.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { systemClock } from '../../src/util/clock.js';
import { ID, TOKEN, startLocal, tempDir, writeData, type LocalUnderTest } from '../support/local-service.js';

const CONTACTS = `phone,chatId,firstName,lastName,saveInAddressbook
+7 900 111-22-33,,Alice,Anders,true
,79002223344@c.us,Bob,,false
79009990001,,Nobody,Nowhere,
12ab,,Broken,,
79003334455,,,Nameless,
79001112233,,Alice Duplicate,,
79003334455,,Carol,Carter,yes
`;

let open: LocalUnderTest[] = [];
afterEach(async () => {
  await Promise.all(open.map((l) => l.close()));
  open = [];
});

async function snapshot(l: LocalUnderTest) {
  const res = await fetch(`${l.url}/_local/waInstance${ID}/contacts/${TOKEN}`);
  expect(res.status).toBe(200);
  // Same state = same records; the service's own timestamps move with every edit.
  const body = (await res.json()) as Record<string, Record<string, unknown>[]>;
  const strip = (list: Record<string, unknown>[]) => list.map(({ updatedAt: _u, createdAt: _c, ...rest }) => rest);
  return { contacts: strip(body.contacts ?? []), phonebook: strip(body.phonebook ?? []) };
}

const input = (over: Record<string, unknown> = {}) => ({ file: 'data/contacts.csv', pace: { delay: 0, jitter: 0 }, ...over });

describe('contacts.import', () => {
  it('upsert twice gives the same state; not-on-messenger and invalid rows are reported, not retried', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/contacts.csv', CONTACTS);
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const store = createMemoryStore();
    const run = (id: string, over: Record<string, unknown> = {}) =>
      runAction(
        contactsImport,
        createActionTestContext({ client: l.client, store, baseDir: dir, runId: id }),
        input({ report: `reports/${id}.csv`, ...over }),
      );

    const first = await run('r1');
    expect(first).toMatchObject({ total: 7, added: 3, updated: 0, notOnMessenger: 1, invalid: 2, duplicates: 1, failed: 0 });
    const state1 = await snapshot(l);
    const callsAfterFirst = l.requests.length;

    const second = await run('r2');
    expect(second).toMatchObject({ added: 0, updated: 3, notOnMessenger: 1, invalid: 2, failed: 0 });
    expect(await snapshot(l)).toEqual(state1);
    // the number not on the messenger was tried once per run, never retried within a run
    const nobody = l.requests.filter((r) => (r.body as { chatId?: string })?.chatId === '79009990001@c.us');
    expect(nobody).toHaveLength(2);
    expect(l.requests.length - callsAfterFirst).toBe(7); // 3 × (add → exists, edit) + 1 add (404)

    const csv = await readFile(path.join(dir, 'reports/r2.csv'), 'utf8');
    expect(csv).toMatch(/79009990001@c\.us.*notOnMessenger/);
    expect(csv).toMatch(/data\/contacts\.csv:5,.*invalid.*phone/);
    expect(csv).toMatch(/contacts\.csv:6,.*invalid.*firstName is required/);
    expect(csv).toMatch(/contacts\.csv:7,.*duplicate/);
  });

  it('reports a duplicate row as `duplicate of <file>:<line>`, naming the row that wins', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/contacts.csv', CONTACTS);
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const s = await runAction(
      contactsImport,
      createActionTestContext({ client: l.client, baseDir: dir }),
      input({ report: 'reports/c.csv' }),
    );
    expect(s).toMatchObject({ total: 7, duplicates: 1 });
    const rows = parseCsv(await readFile(path.join(dir, 'reports/c.csv'), 'utf8'), { columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(7);
    expect(rows.find((r) => r.where === 'data/contacts.csv:7')).toMatchObject({
      chatId: '79001112233@c.us',
      outcome: 'duplicate',
      error: 'duplicate of data/contacts.csv:2',
    });
  });

  it('the row that makes maxConsecutiveFailures in a row is counted failed: counters, report and stop reason agree', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/contacts.csv', 'phone,firstName\n79001112233,A\n79002223344,B\n79003334455,C\n79004445566,D\n');
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"message":"down"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const client = createClient({ apiUrl: url, idInstance: ID, apiTokenInstance: TOKEN, rateLimit: false, retries: 0 });
    try {
      const t = createActionTestContext({ client, baseDir: dir });
      const err = await runAction(contactsImport, t, input({ maxConsecutiveFailures: 3, report: 'reports/f.csv' })).catch((e) => e);
      expect(err.message).toMatch(/3 calls in a row failed/);
      expect(t.progress.at(-1)).toMatchObject({ done: 0, failed: 3 });
      const csv = await readFile(path.join(dir, 'reports/f.csv'), 'utf8');
      expect(csv.match(/,failed,/g)).toHaveLength(3);
    } finally {
      await client.close();
      await new Promise((r) => server.close(r));
    }
  });

  it('dry run predicts changes from the last import and calls nothing; delete removes', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/contacts.csv', 'phone,firstName\n79001112233,Alice\n79002223344,Bob\n');
    await writeData(dir, 'data/contacts2.csv', 'phone,firstName\n79001112233,Alicia\n79002223344,Bob\n79003334455,Carol\n');
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const store = createMemoryStore();
    const ctx = (id: string, dryRun = false) => createActionTestContext({ client: l.client, store, baseDir: dir, runId: id, dryRun });
    await runAction(contactsImport, ctx('a'), input());
    const before = l.requests.length;

    const dry = await runAction(contactsImport, ctx('b'), input({ file: 'data/contacts2.csv', dryRun: true, report: 'reports/dry.json' }));
    expect(l.requests.length).toBe(before);
    expect(dry).toMatchObject({ dryRun: true, unchanged: 1, wouldChange: 2, added: 0 });
    const rows = JSON.parse(await readFile(path.join(dir, 'reports/dry.json'), 'utf8')).rows;
    expect(rows[0]).toMatchObject({ outcome: 'wouldUpdate', change: 'firstName: Alice → Alicia' });
    expect(rows[2]).toMatchObject({ outcome: 'wouldUpsert' });
    // --dry-run of the whole run works the same
    expect(await runAction(contactsImport, ctx('c', true), input({ file: 'data/contacts2.csv' }))).toMatchObject({ dryRun: true });
    expect(l.requests.length).toBe(before);

    const added = await runAction(contactsImport, ctx('d'), input({ mode: 'add' }));
    expect(added).toMatchObject({ alreadyExists: 2, added: 0 });
    const del = await runAction(contactsImport, ctx('e'), input({ mode: 'delete' }));
    expect(del).toMatchObject({ deleted: 2 });
    expect((await snapshot(l)).contacts).toEqual(expect.not.arrayContaining([expect.objectContaining({ chatId: '79001112233@c.us' })]));
    const edit = await runAction(
      contactsImport,
      ctx('f'),
      input({ mode: 'edit', items: [{ phone: '79009990001', firstName: 'X' }], file: undefined }),
    );
    expect(edit).toMatchObject({ notOnMessenger: 1 });
  });

  it('add mode after a crash between the call and the record reports the row as added, not as already existing', async () => {
    const dir = await tempDir();
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const t = createActionTestContext({ client: l.client, baseDir: dir });
    // what the first attempt left behind: the intent, and the contact on the service
    await t.ctx.state.set('intent', ['79001112233@c.us']);
    await l.client.addContact({ chatId: '79001112233@c.us', firstName: 'Alice' });
    const s = await runAction(
      contactsImport,
      t,
      input({ mode: 'add', file: undefined, items: [{ phone: '79001112233', firstName: 'Alice' }] }),
    );
    expect(s).toMatchObject({ added: 1, alreadyExists: 0 });
  });

  it('a wrong token stops contacts.import at the first row, saying what to fix (not one 401 per row)', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/contacts.csv', CONTACTS);
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const t = createActionTestContext({ client: l.clientWith('wrong-token-0000'), baseDir: dir });
    const err = await runAction(contactsImport, t, input()).catch((e) => e);
    expect(err.code).toBe('JOB_STOPPED');
    expect(err.message).toMatch(
      /contacts\.import stopped: the service refused the token of instance 'default' \(HTTP 401\): check apiTokenInstance/,
    );
    expect(l.requests.filter((r) => r.method === 'addContact')).toHaveLength(1);
  });

  it('the record of what msgflow wrote is keyed by the instance identity', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/contacts.csv', 'phone,firstName\n79001112233,Alice\n');
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const store = createMemoryStore();
    await runAction(
      contactsImport,
      createActionTestContext({ client: l.client, store, baseDir: dir, runId: 'a', instance: { name: 'default', identity: 'inst-demo' } }),
      input(),
    );
    expect(await store.kv('shared:contacts:inst-demo').get('79001112233@c.us')).toMatchObject({ f: 'Alice', s: true });
    const dry = await runAction(
      contactsImport,
      createActionTestContext({
        client: l.client,
        store,
        baseDir: dir,
        runId: 'b',
        dryRun: true,
        instance: { name: 'default', identity: 'inst-real' },
      }),
      input({ report: 'reports/b.json' }),
    );
    // another instance under the same name: nothing is known about it
    expect(dry).toMatchObject({ unchanged: 0, wouldAdd: 1 });
  });

  it('a dry run predicts wouldAdd/wouldUpdate/wouldDelete in the usual output shape and calls no writing method', async () => {
    expect(contactsImport.dryRun).toBe(true);
    const dir = await tempDir();
    await writeData(dir, 'data/contacts.csv', CONTACTS);
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const t = createActionTestContext({ client: l.client, baseDir: dir, dryRun: true });
    const s = await runAction(contactsImport, t, input());
    expect(l.requests).toHaveLength(0);
    expect(s).toMatchObject({
      dryRun: true,
      total: 7,
      added: 0,
      invalid: 2,
      duplicates: 1,
      wouldAdd: 4,
      wouldUpdate: 0,
      wouldDelete: 0,
      wouldChange: 4,
    });
    expect(t.progress.at(-1)).toMatchObject({ done: 0, failed: 0, invalid: 2, duplicate: 1, skipped: 4, total: 7 });
  });

  it('counts agree: invalid rows are invalid (not failed), duplicates duplicate, in progress and summary', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/contacts.csv', CONTACTS);
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const t = createActionTestContext({ client: l.client, baseDir: dir });
    const s = await runAction(contactsImport, t, input());
    expect(s).toMatchObject({ added: 3, notOnMessenger: 1, invalid: 2, duplicates: 1, failed: 0 });
    // not on the messenger: final for that row, counted skipped, so `failed` agrees with the summary
    expect(t.progress.at(-1)).toEqual({ done: 3, failed: 0, invalid: 2, duplicate: 1, skipped: 1, waiting: 0, total: 7 });
  });
});
