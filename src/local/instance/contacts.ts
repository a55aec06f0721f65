/**
 * Contacts of one instance. The messenger's contact list and the primary
 * device's phonebook are two separate documents (the spec: "not linked by
 * default"); `saveInAddressbook` (default true) writes the phonebook as well.
 * Each is one lowdb JSON file, written atomically before the answer is sent.
 */
import path from 'node:path';
import type { Low } from 'lowdb';
import { MsgflowError } from '../../api/errors.js';
import type { ParsedRequest } from '../../api/types.js';
import type { Clock } from '../../util/clock.js';
import type { Network } from '../network.js';
import { openJsonDoc } from '../persist/json-doc.js';

export interface ContactRecord {
  chatId: string;
  firstName: string;
  lastName?: string;
  /** ms since the epoch. */
  updatedAt: number;
}

interface ContactDoc {
  contacts: Record<string, ContactRecord>;
}

export class ContactBook {
  private constructor(
    private readonly list: Low<ContactDoc>,
    private readonly phonebook: Low<ContactDoc>,
    private readonly network: Network,
    private readonly clock: Clock,
  ) {}

  static async open(dir: string, network: Network, clock: Clock): Promise<ContactBook> {
    const [list, phonebook] = await Promise.all([
      openJsonDoc<ContactDoc>(path.join(dir, 'contacts.json'), { contacts: {} }),
      openJsonDoc<ContactDoc>(path.join(dir, 'phonebook.json'), { contacts: {} }),
    ]);
    return new ContactBook(list, phonebook, network, clock);
  }

  /**
   * @throws MsgflowError NOT_ON_MESSENGER (404) for a number without an account,
   *   CONTACT_EXISTS (400) when the contact list (or, with saveInAddressbook,
   *   the phonebook) already has it.
   */
  async add(req: ParsedRequest<'addContact'>): Promise<{ addContact: true }> {
    this.requireAccount(req.chatId);
    const exists =
      req.chatId in this.list.data.contacts || (req.saveInAddressbook && req.chatId in this.phonebook.data.contacts);
    if (exists) throw new MsgflowError('CONTACT_EXISTS', { chatId: req.chatId });
    await this.save(req);
    return { addContact: true };
  }

  /** Edits the contact, creating it when missing (the spec lists no "not found" error). */
  async edit(req: ParsedRequest<'editContact'>): Promise<{ editContact: true }> {
    this.requireAccount(req.chatId);
    await this.save(req);
    return { editContact: true };
  }

  /** Removes the contact from the contact list and the phonebook. */
  async delete(req: ParsedRequest<'deleteContact'>): Promise<{ deleteContact: true }> {
    this.requireAccount(req.chatId);
    const writes: Promise<void>[] = [];
    for (const db of [this.list, this.phonebook]) {
      if (req.chatId in db.data.contacts) {
        delete db.data.contacts[req.chatId];
        writes.push(db.write());
      }
    }
    await Promise.all(writes);
    return { deleteContact: true };
  }

  /** The messenger's contact list. */
  contacts(): ContactRecord[] {
    return Object.values(this.list.data.contacts);
  }

  /** The primary device's phonebook. */
  phonebookEntries(): ContactRecord[] {
    return Object.values(this.phonebook.data.contacts);
  }

  /** "Sender name as in the phonebook contact list": '' when not in the phonebook. */
  phonebookName(chatId: string): string {
    const c = this.phonebook.data.contacts[chatId];
    if (!c) return '';
    return c.lastName ? `${c.firstName} ${c.lastName}` : c.firstName;
  }

  private requireAccount(chatId: string): void {
    if (!this.network.hasAccount(chatId)) {
      throw new MsgflowError('NOT_ON_MESSENGER', { chatId, messenger: this.network.name });
    }
  }

  private async save(req: { chatId: string; firstName: string; lastName?: string; saveInAddressbook: boolean }) {
    const record: ContactRecord = { chatId: req.chatId, firstName: req.firstName, updatedAt: this.clock.now() };
    if (req.lastName !== undefined) record.lastName = req.lastName;
    this.list.data.contacts[req.chatId] = record;
    const writes = [this.list.write()];
    if (req.saveInAddressbook) {
      this.phonebook.data.contacts[req.chatId] = { ...record };
      writes.push(this.phonebook.write());
    }
    await Promise.all(writes);
  }
}
