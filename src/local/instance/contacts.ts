/**
 * Contacts of one instance. The messenger's contact list and the primary
 * device's phonebook are two separate collections (the spec: "not linked by
 * default"); `saveInAddressbook` (default true) writes the phonebook as well.
 *
 * Both live in one keyed log, contacts.jsonl (see persist/keyed-log.ts), one
 * line per change, keyed by the phone number:
 *
 *     {"k":79001112233,"cp":{"f":"Alice","l":"Smith","u":1767225600000}}   contact list and phonebook
 *     {"k":79001112233,"c":{...}}                                          contact list only
 *     {"k":79001112233,"p":{...}}                                          phonebook only
 *     {"k":79001112233,"d":1}                                              deleted from both
 *
 * In memory one map holds both, from the number to the value's JSON text
 * (one string when both hold the same record): about 130 bytes a contact.
 * The line is in the file before the index changes and before the answer.
 */
import path from 'node:path';
import { z } from 'zod';
import { MsgflowError } from '../../api/errors.js';
import { personalChatId, phoneOfChatId } from '../../api/chat-id.js';
import type { ParsedRequest } from '../../api/types.js';
import type { Clock } from '../../util/clock.js';
import type { Network } from '../network.js';
import { corruptAt } from '../persist/append-log.js';
import { KeyedLog, keyedLine, type Key, type KeyedState } from '../persist/keyed-log.js';
import { readLegacyDoc, retireLegacyDoc } from '../persist/legacy-doc.js';
import { KeyedMutex } from '../persist/keyed-mutex.js';

export interface ContactRecord {
  chatId: string;
  firstName: string;
  lastName?: string;
  /** ms since the epoch. */
  updatedAt: number;
}

/** On disk: short names, the chatId is the key. */
interface StoredContact {
  f: string;
  l?: string;
  u: number;
}

const LegacyContact = z.strictObject({
  chatId: z.string(),
  firstName: z.string(),
  lastName: z.string().optional(),
  updatedAt: z.number(),
});
/** contacts.json / phonebook.json as written by earlier releases (lowdb). */
const LegacyContactDoc = z.strictObject({ contacts: z.record(z.string(), LegacyContact) });

/**
 * Both collections in one map: a string when the contact list and the
 * phonebook hold the same record (the usual case), else a pair
 * [contact list, phonebook] with undefined for "not there".
 */
type Entry = string | [list: string | undefined, phonebook: string | undefined];

class ContactsState implements KeyedState {
  private readonly entries = new Map<number, Entry>();

  get liveLines(): number {
    return this.entries.size;
  }

  inList(phone: number): boolean {
    return this.listValue(phone) !== undefined;
  }

  inPhonebook(phone: number): boolean {
    return this.phonebookValue(phone) !== undefined;
  }

  listValue(phone: number): string | undefined {
    const e = this.entries.get(phone);
    return typeof e === 'string' ? e : e?.[0];
  }

  phonebookValue(phone: number): string | undefined {
    const e = this.entries.get(phone);
    return typeof e === 'string' ? e : e?.[1];
  }

  *list(): Iterable<[number, string]> {
    for (const [k, e] of this.entries) {
      const v = typeof e === 'string' ? e : e[0];
      if (v !== undefined) yield [k, v];
    }
  }

  *phonebook(): Iterable<[number, string]> {
    for (const [k, e] of this.entries) {
      const v = typeof e === 'string' ? e : e[1];
      if (v !== undefined) yield [k, v];
    }
  }

  apply(key: Key, field: string, value: string | number, where: string): void {
    if (typeof key !== 'number') throw corruptAt(where, `key ${JSON.stringify(key)} is not a phone number`);
    if (field !== 'd' && (typeof value !== 'string' || value.charCodeAt(0) !== 123)) throw corruptAt(where, `'${field}' must be an object`);
    const raw = value as string;
    switch (field) {
      case 'cp':
        this.entries.set(key, raw);
        return;
      case 'c':
        this.set(key, raw, this.phonebookValue(key));
        return;
      case 'p':
        this.set(key, this.listValue(key), raw);
        return;
      case 'd':
        this.entries.delete(key);
        return;
      default:
        throw corruptAt(where, `unknown field '${field}' (expected cp, c, p or d)`);
    }
  }

  private set(key: number, list: string | undefined, phonebook: string | undefined): void {
    // The same text in both collapses into one shared string again.
    this.entries.set(key, list === phonebook && list !== undefined ? list : [list, phonebook]);
  }

  *snapshot(): Iterable<string> {
    for (const [k, e] of this.entries) {
      if (typeof e === 'string') yield keyedLine(k, 'cp', e);
      else {
        if (e[0] !== undefined) yield keyedLine(k, 'c', e[0]);
        if (e[1] !== undefined) yield keyedLine(k, 'p', e[1]);
      }
    }
  }
}

export class ContactBook {
  /** One change at a time per number, so "already exists" is decided on what is on disk. */
  private readonly mutex = new KeyedMutex<number>();

  private constructor(
    private readonly state: ContactsState,
    private readonly log: KeyedLog,
    private readonly network: Network,
    private readonly clock: Clock,
  ) {}

  /**
   * Loads contacts.jsonl; on the first start after an upgrade, converts
   * contacts.json and phonebook.json (earlier releases) into it.
   * @throws MsgflowError LOCAL_DATA_INVALID naming the file (and line or key)
   */
  static async open(dir: string, shownDir: string, network: Network, clock: Clock): Promise<ContactBook> {
    const state = new ContactsState();
    const log = new KeyedLog(path.join(dir, 'contacts.jsonl'), path.join(shownDir, 'contacts.jsonl'), state);
    const legacy = ['contacts.json', 'phonebook.json'].map((n) => ({ file: path.join(dir, n), shown: path.join(shownDir, n) }));
    if (!(await log.load())) {
      const [list, phonebook] = await Promise.all(legacy.map((l) => readLegacyDoc(l.file, l.shown, LegacyContactDoc)));
      if (list || phonebook) {
        migrate(state, list?.contacts ?? {}, legacy[0]!.shown, 'c');
        migrate(state, phonebook?.contacts ?? {}, legacy[1]!.shown, 'p');
        await log.compact();
      }
    }
    // Converted (now or by a start that died before this line): keep the old files aside, never read again.
    for (const l of legacy) await retireLegacyDoc(l.file);
    return new ContactBook(state, log, network, clock);
  }

  /**
   * @throws MsgflowError NOT_ON_MESSENGER (404) for a number without an account,
   *   CONTACT_EXISTS (400) when the contact list (or, with saveInAddressbook,
   *   the phonebook) already has it, LOCAL_WRITE_FAILED when the disk refused.
   */
  async add(req: ParsedRequest<'addContact'>): Promise<{ addContact: true }> {
    const phone = this.requireAccount(req.chatId);
    await this.mutex.run(phone, async () => {
      const exists = this.state.inList(phone) || (req.saveInAddressbook && this.state.inPhonebook(phone));
      if (exists) throw MsgflowError.answer('CONTACT_EXISTS', { chatId: req.chatId });
      await this.save(phone, req);
    });
    return { addContact: true };
  }

  /** Edits the contact, creating it when missing (the spec lists no "not found" error). */
  async edit(req: ParsedRequest<'editContact'>): Promise<{ editContact: true }> {
    const phone = this.requireAccount(req.chatId);
    await this.mutex.run(phone, () => this.save(phone, req));
    return { editContact: true };
  }

  /** Removes the contact from the contact list and the phonebook. */
  async delete(req: ParsedRequest<'deleteContact'>): Promise<{ deleteContact: true }> {
    const phone = this.requireAccount(req.chatId);
    await this.mutex.run(phone, async () => {
      if (!this.state.inList(phone) && !this.state.inPhonebook(phone)) return;
      await this.log.write([[phone, 'd', '1']]);
    });
    return { deleteContact: true };
  }

  /** The messenger's contact list. */
  contacts(): ContactRecord[] {
    return [...this.state.list()].map(([k, v]) => toRecord(k, v));
  }

  /** The primary device's phonebook. */
  phonebookEntries(): ContactRecord[] {
    return [...this.state.phonebook()].map(([k, v]) => toRecord(k, v));
  }

  /** "Sender name as in the phonebook contact list": '' when not in the phonebook. */
  phonebookName(chatId: string): string {
    const phone = phoneOfChatId(chatId);
    const raw = phone === undefined ? undefined : this.state.phonebookValue(phone);
    if (raw === undefined) return '';
    const c = JSON.parse(raw) as StoredContact;
    return c.l ? `${c.f} ${c.l}` : c.f;
  }

  /** Whether the number is in the contact list or the phonebook (whose statuses the account sees). */
  knows(phone: number): boolean {
    return this.state.inList(phone) || this.state.inPhonebook(phone);
  }

  private requireAccount(chatId: string): number {
    const phone = phoneOfChatId(chatId);
    if (phone === undefined || !this.network.hasAccount(chatId)) {
      throw MsgflowError.answer('NOT_ON_MESSENGER', { chatId, messenger: this.network.name });
    }
    return phone;
  }

  private async save(phone: number, req: { firstName: string; lastName?: string; saveInAddressbook: boolean }) {
    const stored: StoredContact = { f: req.firstName, u: this.clock.now() };
    if (req.lastName !== undefined) stored.l = req.lastName;
    // Field order as above, so the same record always has the same text.
    const raw = JSON.stringify(req.lastName !== undefined ? { f: stored.f, l: stored.l, u: stored.u } : stored);
    const field = req.saveInAddressbook ? 'cp' : 'c';
    await this.log.write([[phone, field, raw]]);
  }
}

function toRecord(phone: number, raw: string): ContactRecord {
  const c = JSON.parse(raw) as StoredContact;
  const r: ContactRecord = { chatId: personalChatId(phone), firstName: c.f, updatedAt: c.u };
  if (c.l !== undefined) {
    return { chatId: r.chatId, firstName: c.f, lastName: c.l, updatedAt: c.u };
  }
  return r;
}

function migrate(state: ContactsState, contacts: Record<string, z.output<typeof LegacyContact>>, shown: string, field: 'c' | 'p'): void {
  for (const [chatId, c] of Object.entries(contacts)) {
    const phone = phoneOfChatId(chatId);
    if (phone === undefined) throw corruptAt(`${shown} key 'contacts.${chatId}'`, 'not a personal chat id (digits@c.us)');
    const stored: StoredContact =
      c.lastName !== undefined ? { f: c.firstName, l: c.lastName, u: c.updatedAt } : { f: c.firstName, u: c.updatedAt };
    const raw = JSON.stringify(stored);
    // The same record in both documents becomes one shared entry.
    state.apply(phone, field, raw, shown);
  }
}
