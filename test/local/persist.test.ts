/**
 * The local service's storage: keyed logs (contacts.jsonl, checks.jsonl)
 * whose writes append one line, compaction that a crash cannot break, the
 * conversion of the documents earlier releases wrote, data files of the wrong
 * shape refused by name, and memory that changes only after the disk did.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalService, type LocalService } from '../../src/local/service.js';
import { KeyedLog, keyedLine, type Key, type KeyedState } from '../../src/local/persist/keyed-log.js';
import { ManualClock } from '../../src/util/clock.js';
import { A, ALICE, BOB, conformanceConfig, startLocal, T0, type LocalUnderTest } from '../support/local-service.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(tmpdir(), 'msgflow-persist-'));
  dirs.push(d);
  return d;
}

async function call(service: LocalService, method: string, body: unknown) {
  const r = await service.handle({
    httpMethod: 'POST',
    path: `/waInstance${A.idInstance}/${method}/${A.apiTokenInstance}`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: r.body as any };
}

async function contactsOf(service: LocalService) {
  const r = await service.handle({ httpMethod: 'GET', path: `/_local/waInstance${A.idInstance}/contacts/${A.apiTokenInstance}` });
  return r.body as { contacts: { chatId: string; firstName: string; lastName?: string }[]; phonebook: { chatId: string }[] };
}

/** A service over `dir` whose instance A directory may be filled before start. */
function serviceOver(dir: string, clock = new ManualClock(T0)): LocalService {
  return createLocalService(conformanceConfig(), { baseDir: dir, clock });
}

/** A small state for driving KeyedLog directly: key → value text. */
class MapState implements KeyedState {
  readonly map = new Map<Key, string>();
  get liveLines() {
    return this.map.size;
  }
  apply(key: Key, field: string, raw: string | number) {
    if (field === 'd') this.map.delete(key);
    else this.map.set(key, String(raw));
  }
  *snapshot() {
    for (const [k, v] of this.map) yield keyedLine(k, 'v', v);
  }
}

const lineCount = async (file: string) => (await readFile(file, 'utf8')).split('\n').filter(Boolean).length;

describe('keyed log', () => {
  it('replays what was written, numbers and strings as keys, escapes included', async () => {
    const file = path.join(await tempDir(), 'x.jsonl');
    const a = new MapState();
    const log = new KeyedLog(file, 'x.jsonl', a);
    await log.load();
    await log.write([[79001112233, 'v', JSON.stringify({ f: 'Zoë "Z"', u: 1 })]]);
    await log.write([
      ['user:alice', 'v', '{"e":1}'],
      [5, 'v', '7'],
    ]);
    await log.write([[5, 'd', '1']]);
    const b = new MapState();
    await new KeyedLog(file, 'x.jsonl', b).load();
    expect([...b.map]).toEqual([...a.map]);
    expect(JSON.parse(b.map.get(79001112233)!)).toEqual({ f: 'Zoë "Z"', u: 1 });
  });

  it('compacts when most lines are stale, and the result replays to the same state', async () => {
    const file = path.join(await tempDir(), 'x.jsonl');
    const s = new MapState();
    const log = new KeyedLog(file, 'x.jsonl', s);
    await log.load();
    for (let i = 0; i < 12_000; i++) await log.write([[i % 10, 'v', String(i)]]);
    // Compaction runs in the write sequence; one more write waits for it.
    await log.write([[99, 'v', '1']]);
    expect(await lineCount(file)).toBeLessThan(3_000);
    const again = new MapState();
    await new KeyedLog(file, 'x.jsonl', again).load();
    expect([...again.map].sort()).toEqual([...s.map].sort());
  });

  it('a crash during compaction (temp file half written, not renamed) leaves a readable store', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'x.jsonl');
    const s = new MapState();
    const log = new KeyedLog(file, 'x.jsonl', s);
    await log.load();
    for (let i = 0; i < 50; i++) await log.write([[i, 'v', String(i)]]);
    await writeFile(path.join(dir, '.x.jsonl.tmp'), '{"k":1,"v":1}\n{"k":2,"v"');
    const again = new MapState();
    await new KeyedLog(file, 'x.jsonl', again).load();
    expect(again.map.size).toBe(50);
    await new KeyedLog(file, 'x.jsonl', again).compact();
    const third = new MapState();
    await new KeyedLog(file, 'x.jsonl', third).load();
    expect([...third.map]).toEqual([...again.map]);
  });

  it('a corrupt line in the middle refuses the load, naming the file and the line', async () => {
    const file = path.join(await tempDir(), 'x.jsonl');
    await writeFile(file, '{"k":1,"v":1}\n{"k":2,"v":\n{"k":3,"v":3}\n');
    await expect(new KeyedLog(file, 'data/x.jsonl', new MapState()).load()).rejects.toThrow(
      /^local service data data\/x\.jsonl:2: not a JSON record/,
    );
    await writeFile(file, '{"k":1,"v":1}\n[1,2]\n');
    await expect(new KeyedLog(file, 'data/x.jsonl', new MapState()).load()).rejects.toThrow(/data\/x\.jsonl:2: expected a record/);
  });
});

describe('data of the current release is converted on first start (no user loses local data)', () => {
  it('contacts.json, phonebook.json and checks.json become keyed logs; the old files are kept aside', async () => {
    const dir = await tempDir();
    const inst = path.join(dir, 'data', A.idInstance);
    await mkdir(inst, { recursive: true });
    // Exactly what the previous release (lowdb JSONFile) wrote.
    const doc = (contacts: Record<string, unknown>) => JSON.stringify({ contacts }, null, 2);
    await writeFile(
      path.join(inst, 'contacts.json'),
      doc({
        [ALICE]: { chatId: ALICE, firstName: 'Alice', lastName: 'Smith', updatedAt: T0 - 5000 },
        [BOB]: { chatId: BOB, firstName: 'Bob', updatedAt: T0 - 4000 },
      }),
    );
    await writeFile(
      path.join(inst, 'phonebook.json'),
      doc({ [ALICE]: { chatId: ALICE, firstName: 'Alice', lastName: 'Smith', updatedAt: T0 - 5000 } }),
    );
    await writeFile(
      path.join(inst, 'checks.json'),
      JSON.stringify({
        cache: {
          'phone:79001112233': { exist: true, chatId: ALICE, username: '@alice', phoneNumber: 79001112233, checkedAt: T0 - 1000 },
          'phone:79009990000': { exist: false, chatId: '', checkedAt: T0 - 900 },
          'user:@bob': { exist: true, chatId: BOB, username: '@bob', phoneNumber: 79002223344, checkedAt: T0 - 800 },
        },
        window: { startedAt: T0 - 2000, targets: ['phone:79001112233', 'phone:79009990000', 'user:@bob'] },
        pausedUntil: null,
      }),
    );
    for (let round = 0; round < 2; round++) {
      const service = serviceOver(dir);
      await service.start();
      try {
        const c = await contactsOf(service);
        expect(c.contacts).toEqual([
          { chatId: ALICE, firstName: 'Alice', lastName: 'Smith', updatedAt: T0 - 5000 },
          { chatId: BOB, firstName: 'Bob', updatedAt: T0 - 4000 },
        ]);
        expect(c.phonebook.map((x) => x.chatId)).toEqual([ALICE]);
        expect((await call(service, 'addContact', { chatId: BOB, firstName: 'Bob', saveInAddressbook: false })).body).toEqual({
          message: `Contact ${BOB} already exists`,
        });
        expect((await call(service, 'checkAccount', { phoneNumber: 79001112233 })).body).toEqual({
          exist: true,
          chatId: ALICE,
          username: '@alice',
          phoneNumber: 79001112233,
          fromCache: true,
        });
        expect((await call(service, 'checkAccount', { phoneNumber: 79009990000 })).body).toEqual({ exist: false, chatId: '' });
        expect((await call(service, 'checkAccount', { username: '@bob' })).body).toMatchObject({ chatId: BOB, fromCache: true });
        // The window kept its three numbers: the limit (3) is reached by the next new one (and the pause stays).
        if (round === 1)
          expect((await call(service, 'checkAccount', { phoneNumber: 79003334455 })).body).toMatchObject({
            status: false,
            data: { reason: 'rate_limit_exceeded' },
          });
      } finally {
        await service.close();
      }
    }
    const names = await readdir(inst);
    expect(names).toEqual(
      expect.arrayContaining([
        'contacts.jsonl',
        'checks.jsonl',
        'contacts.json.migrated',
        'phonebook.json.migrated',
        'checks.json.migrated',
      ]),
    );
    expect(names).not.toContain('contacts.json');
  });
});

describe('a data file of the wrong shape refuses the start, naming the file and the key', () => {
  const cases: [string, string, RegExp][] = [
    ['contacts.json', 'null', /<INSTANCE_ID>\/contacts\.json: .*expected object/],
    [
      'contacts.json',
      '{"contacts":{"79001112233@c.us":{"chatId":"79001112233@c.us","firstName":5,"updatedAt":1}}}',
      /contacts\.json key 'contacts\.79001112233@c\.us\.firstName'/,
    ],
    ['phonebook.json', '[]', /<INSTANCE_ID>\/phonebook\.json: /],
    ['checks.json', '{"cache":{},"window":null}', /checks\.json key 'pausedUntil'/],
    ['checks.json', '{"cache":', /checks\.json: not valid JSON/],
    ['meta.json', 'null', /<INSTANCE_ID>\/meta\.json: /],
    ['meta.json', '{"seededAt":"yesterday"}', /meta\.json key 'seededAt'/],
    [
      'contacts.jsonl',
      '{"k":79001112233,"cp":{"f":"A","u":1}}\n{"k":"bob","cp":{"f":"B","u":1}}\n',
      /contacts\.jsonl:2: key "bob" is not a phone number/,
    ],
  ];
  for (const [name, text, error] of cases) {
    it(`${name}: ${text.slice(0, 40)}`, async () => {
      const dir = await tempDir();
      const inst = path.join(dir, 'data', A.idInstance);
      await mkdir(inst, { recursive: true });
      await writeFile(path.join(inst, name), text);
      const service = serviceOver(dir);
      const failure = await service.start().then(
        () => undefined,
        (e: Error) => e,
      );
      await service.close();
      expect(failure?.message).toMatch(/^local service data /);
      expect(failure?.message).toMatch(error);
      expect(failure?.message).not.toContain(A.idInstance);
      // Nothing was emptied or moved.
      expect(await readFile(path.join(inst, name), 'utf8')).toBe(text);
    });
  }
});

describe('memory changes only after the disk write succeeded', () => {
  let h: LocalUnderTest<ManualClock> | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  // Tests run as root, which ignores file modes, so a read-only data dir is
  // reproduced by putting a directory where the log file is: every append
  // then fails with EISDIR, as on a read-only or full disk.
  async function breakFile(file: string) {
    await rm(file, { force: true });
    await mkdir(file);
  }

  it('addContact answers 500 and the contact is not visible; once the disk works, a retry adds it', async () => {
    h = await startLocal({ kind: 'http', config: conformanceConfig() });
    const file = path.join(h.service.dataDir, A.idInstance, 'contacts.jsonl');
    await breakFile(file);
    const failed = await h.call('addContact', { chatId: ALICE, firstName: 'Alice' });
    expect(failed.statusCode).toBe(500);
    expect(JSON.stringify(failed.body)).not.toContain(A.idInstance);
    expect((await h.admin('contacts')).body).toEqual({ contacts: [], phonebook: [] });
    expect((await h.call('addContact', { chatId: ALICE, firstName: 'Alice' })).statusCode).toBe(500);
    await rm(file, { recursive: true });
    expect((await h.call('addContact', { chatId: ALICE, firstName: 'Alice' })).body).toEqual({ addContact: true });
    await h.restart();
    expect((await h.admin('contacts')).body.contacts).toHaveLength(1);
  });

  it('checkAccount answers 500 and caches nothing; once the disk works, the number is looked up, not taken from the cache', async () => {
    h = await startLocal({ kind: 'http', config: conformanceConfig() });
    const file = path.join(h.service.dataDir, A.idInstance, 'checks.jsonl');
    await breakFile(file);
    expect((await h.call('checkAccount', { phoneNumber: 79001112233 })).statusCode).toBe(500);
    await rm(file, { recursive: true });
    expect((await h.call('checkAccount', { phoneNumber: 79001112233 })).body).toMatchObject({ exist: true, fromCache: false });
    expect((await h.call('checkAccount', { phoneNumber: 79001112233 })).body).toMatchObject({ exist: true, fromCache: true });
    expect((await stat(file)).isFile()).toBe(true);
  });

  it('two concurrent addContact of one number: one is added, the other is told it exists', async () => {
    h = await startLocal({ kind: 'in-process', config: conformanceConfig() });
    const answers = await Promise.all([0, 1, 2].map(() => h!.call('addContact', { chatId: ALICE, firstName: 'Alice' })));
    expect(answers.map((a) => JSON.stringify(a.body)).sort()).toEqual([
      JSON.stringify({ addContact: true }),
      JSON.stringify({ message: `Contact ${ALICE} already exists` }),
      JSON.stringify({ message: `Contact ${ALICE} already exists` }),
    ]);
  });
});
