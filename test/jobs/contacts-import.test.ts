import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { contactsImport, ContactsImportInput } from '../../src/actions/index.js';
import { systemClock } from '../../src/util/clock.js';
import { Durables, makeContext } from './helpers/context.js';
import { ID, TOKEN, startLocal, tempDir, writeData, type LocalUnderTest } from './helpers/local.js';

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

const input = (over: Record<string, unknown> = {}) =>
  ContactsImportInput.parse({ file: 'data/contacts.csv', pace: { delay: 0, jitter: 0 }, ...over });

describe('contacts.import', () => {
  it('upsert twice gives the same state; not-on-messenger and invalid rows are reported, not retried', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/contacts.csv', CONTACTS);
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const shared = new Durables();
    const run = (id: string, over: Record<string, unknown> = {}) => {
      const d = new Durables();
      Object.assign(d, { sharedSpaces: shared.sharedSpaces });
      return contactsImport.run(makeContext({ client: l.client, clock: systemClock, durables: d, baseDir: dir, runId: id }), input({ report: `reports/${id}.csv`, ...over }));
    };

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
    expect(csv).toMatch(/data\/contacts\.csv row 4.*invalid.*phone/);
    expect(csv).toMatch(/row 5.*invalid.*firstName is required/);
    expect(csv).toMatch(/row 6.*duplicate/);
  });

  it('dry run predicts changes from the last import and calls nothing; delete removes', async () => {
    const dir = await tempDir();
    await writeData(dir, 'data/contacts.csv', 'phone,firstName\n79001112233,Alice\n79002223344,Bob\n');
    await writeData(dir, 'data/contacts2.csv', 'phone,firstName\n79001112233,Alicia\n79002223344,Bob\n79003334455,Carol\n');
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const durables = new Durables();
    const ctx = (id: string, dryRun = false) => makeContext({ client: l.client, clock: systemClock, durables: Object.assign(new Durables(), { sharedSpaces: durables.sharedSpaces }), baseDir: dir, runId: id, dryRun });
    await contactsImport.run(ctx('a'), input());
    const before = l.requests.length;

    const dry = await contactsImport.run(ctx('b'), input({ file: 'data/contacts2.csv', dryRun: true, report: 'reports/dry.json' }));
    expect(l.requests.length).toBe(before);
    expect(dry).toMatchObject({ dryRun: true, unchanged: 1, wouldChange: 2, added: 0 });
    const rows = JSON.parse(await readFile(path.join(dir, 'reports/dry.json'), 'utf8')).rows;
    expect(rows[0]).toMatchObject({ outcome: 'wouldUpdate', change: 'firstName: Alice → Alicia' });
    expect(rows[2]).toMatchObject({ outcome: 'wouldUpsert' });
    // --dry-run of the whole run works the same
    expect(await contactsImport.run(ctx('c', true), input({ file: 'data/contacts2.csv' }))).toMatchObject({ dryRun: true });
    expect(l.requests.length).toBe(before);

    const added = await contactsImport.run(ctx('d'), input({ mode: 'add' }));
    expect(added).toMatchObject({ alreadyExists: 2, added: 0 });
    const del = await contactsImport.run(ctx('e'), input({ mode: 'delete' }));
    expect(del).toMatchObject({ deleted: 2 });
    expect((await snapshot(l)).contacts).toEqual(expect.not.arrayContaining([expect.objectContaining({ chatId: '79001112233@c.us' })]));
    const edit = await contactsImport.run(ctx('f'), input({ mode: 'edit', items: [{ phone: '79009990001', firstName: 'X' }], file: undefined }));
    expect(edit).toMatchObject({ notOnMessenger: 1 });
  });

  it('add mode after a crash between the call and the record reports the row as added, not as already existing', async () => {
    const dir = await tempDir();
    const l = await startLocal({ dir, clock: systemClock });
    open.push(l);
    const durables = new Durables();
    // what the first attempt left behind: the intent, and the contact on the service
    await durables.step.set('i:79001112233@c.us', true);
    await l.client.addContact({ chatId: '79001112233@c.us', firstName: 'Alice' });
    const s = await contactsImport.run(makeContext({ client: l.client, clock: systemClock, durables, baseDir: dir }), input({ mode: 'add', file: undefined, items: [{ phone: '79001112233', firstName: 'Alice' }] }));
    expect(s).toMatchObject({ added: 1, alreadyExists: 0 });
  });
});
