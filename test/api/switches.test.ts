import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { isSwitchedOn, MESSAGE_KIND_SWITCHES, NOTIFICATION_SWITCHES } from '../../src/api/switches.js';

describe('which setting switches which notification', () => {
  it('a status notification needs outgoingWebhook, except failed and noAccount, which cannot be switched off', () => {
    const off = { outgoingWebhook: 'no' } as const;
    expect(isSwitchedOn(off, { typeWebhook: 'outgoingMessageStatus', status: 'delivered' })).toBe(false);
    expect(isSwitchedOn(off, { typeWebhook: 'outgoingMessageStatus', status: 'noAccount' })).toBe(true);
    expect(isSwitchedOn(off, { typeWebhook: 'outgoingMessageStatus', status: 'failed' })).toBe(true);
    expect(isSwitchedOn({ outgoingWebhook: 'yes' }, { typeWebhook: 'outgoingMessageStatus', status: 'read' })).toBe(true);
  });

  it('a message kind with a switch of its own needs both', () => {
    const incoming = { typeWebhook: 'incomingMessageReceived', typeMessage: 'editedMessage' };
    expect(isSwitchedOn({ incomingWebhook: 'yes' }, incoming)).toBe(false);
    expect(isSwitchedOn({ incomingWebhook: 'yes', editedMessageWebhook: 'yes' }, incoming)).toBe(true);
    expect(isSwitchedOn({ incomingWebhook: 'yes' }, { typeWebhook: 'incomingCall' })).toBe(false);
    expect(isSwitchedOn({ incomingCallWebhook: 'yes' }, { typeWebhook: 'incomingCall' })).toBe(true);
  });

  it('docs/local-service.md shows the same table', async () => {
    const doc = await readFile(new URL('../../docs/local-service.md', import.meta.url), 'utf8');
    for (const [type, switches] of Object.entries(NOTIFICATION_SWITCHES)) {
      const row = doc.split('\n').find((l) => l.startsWith(`| \`${type}\` |`));
      expect(row, type).toBeDefined();
      for (const s of switches) expect(row, type).toContain(`\`${s}\``);
    }
    for (const [kind, s] of Object.entries(MESSAGE_KIND_SWITCHES)) {
      expect(doc).toContain(`| a message of kind \`${kind}\` | its type's switch and \`${s}\` |`);
    }
  });
});
