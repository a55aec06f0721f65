import { describe, expect, it } from 'vitest';
import { ALICE, BOB, CAROL, conformanceConfig, HIDDEN, NOBODY, useLocal, type TransportKind } from '../../support/local-service.js';

export function contactsSuite(kind: TransportKind) {
  describe('contacts', () => {
    const h = useLocal(kind, () => ({ config: conformanceConfig() }));

    it('addContact writes the contact list and, by default, the phonebook; success bodies carry no message', async () => {
      const r = await h.call('addContact', { chatId: ALICE, firstName: 'Alice', lastName: 'A' });
      expect(r.statusCode).toBe(200);
      expect(r.body).toEqual({ addContact: true });
      const r2 = await h.call('addContact', { chatId: BOB, firstName: 'Bob', saveInAddressbook: false });
      expect(r2.body).toEqual({ addContact: true });
      const snap = (await h.admin('contacts')).body;
      expect(snap.contacts.map((c: { chatId: string }) => c.chatId).sort()).toEqual([ALICE, BOB]);
      // saveInAddressbook:false keeps Bob out of the phonebook: the two lists are separate.
      expect(snap.phonebook.map((c: { chatId: string }) => c.chatId)).toEqual([ALICE]);
      expect(snap.phonebook[0]).toMatchObject({ firstName: 'Alice', lastName: 'A' });
    });

    it('addContact twice: 400 "Contact <chat_id> already exists", and no addContact field', async () => {
      await h.call('addContact', { chatId: ALICE, firstName: 'Alice' });
      const r = await h.call('addContact', { chatId: ALICE, firstName: 'Again' });
      expect(r.statusCode).toBe(400);
      expect(r.body).toEqual({ message: `Contact ${ALICE} already exists` });
    });

    it('add, edit and delete answer 404 "<chat_id> is not on WhatsApp" for a number without an account', async () => {
      for (const [method, body] of [
        ['addContact', { chatId: NOBODY, firstName: 'X' }],
        ['editContact', { chatId: NOBODY, firstName: 'X' }],
        ['deleteContact', { chatId: NOBODY }],
      ] as const) {
        const r = await h.call(method, body);
        expect(r.statusCode, method).toBe(404);
        expect(r.body, method).toEqual({ message: `${NOBODY} is not on WhatsApp` });
      }
      // A hidden number still has an account: privacy only changes checkAccount.
      const hidden = await h.call('addContact', { chatId: `${HIDDEN}@c.us`, firstName: 'Ghost' });
      expect(hidden.body).toEqual({ addContact: true });
    });

    it('editContact changes names (and creates a missing contact); deleteContact removes it from both lists', async () => {
      await h.call('addContact', { chatId: CAROL, firstName: 'Carol' });
      const e = await h.call('editContact', { chatId: CAROL, firstName: 'Caroline', lastName: 'C' });
      expect(e.statusCode).toBe(200);
      expect(e.body).toEqual({ editContact: true });
      let snap = (await h.admin('contacts')).body;
      expect(snap.contacts).toEqual([expect.objectContaining({ chatId: CAROL, firstName: 'Caroline', lastName: 'C' })]);
      expect(snap.phonebook).toEqual([expect.objectContaining({ chatId: CAROL, firstName: 'Caroline' })]);
      const e2 = await h.call('editContact', { chatId: BOB, firstName: 'Bob', saveInAddressbook: false });
      expect(e2.body).toEqual({ editContact: true });
      const d = await h.call('deleteContact', { chatId: CAROL });
      expect(d.body).toEqual({ deleteContact: true });
      snap = (await h.admin('contacts')).body;
      expect(snap.contacts.map((c: { chatId: string }) => c.chatId)).toEqual([BOB]);
      expect(snap.phonebook).toEqual([]);
    });

    it('validates contact bodies with the spec texts', async () => {
      const r = await h.call('addContact', { chatId: 'alice', firstName: 'A' });
      expect(r.statusCode).toBe(400);
      expect((r.body as { message: string }).message).toMatch(/^Validation failed\. Details: 'chatId' must be a personal chat ID/);
      const r2 = await h.call('addContact', { chatId: ALICE });
      expect(r2.body).toEqual({ message: "Validation failed. Details: 'firstName' is required" });
      expect(r2.body).not.toHaveProperty('addContact');
    });

    it('a contact added stays added across a restart', async () => {
      await h.call('addContact', { chatId: ALICE, firstName: 'Alice' });
      await h.restart();
      const r = await h.call('addContact', { chatId: ALICE, firstName: 'Alice' });
      expect(r.statusCode).toBe(400);
      expect((await h.admin('contacts')).body.phonebook).toHaveLength(1);
    });
  });
}
