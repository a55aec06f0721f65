/**
 * Flows and the messages-and-chats actions: a flow corrects a message it sent
 * (editMessage with the send step's id), archives the chat and lists the
 * chats; another flow starts on the edit's notification (typeMessage
 * editedMessage).
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function flowTest(files: Record<string, string>) {
  const dir = project({ 'config.yaml': LOCAL_CONFIG, ...files }, 'msgflow-chats-');
  dirs.push(dir);
  const r = await cli(['test'], dir);
  return { ...r, out: r.stdout + r.stderr };
}

const ALICE = '79001112233@c.us';

describe('flows and the messages-and-chats actions', () => {
  it('a flow edits the message it sent, archives the chat and sees it archived in getChats', async () => {
    const r = await flowTest({
      'flows/fix.yaml': `name: fix
steps:
  - id: send
    uses: sendMessage
    with: { chatId: ${ALICE}, message: "Lunch at 7" }
  - id: fix
    uses: editMessage
    with: { chatId: ${ALICE}, idMessage: "\${{ steps.send.output.idMessage }}", message: "Lunch at 8" }
  - id: archive
    uses: archiveChat
    with: { chatId: ${ALICE} }
  - id: chats
    uses: getChats
    with: {}
  - id: seen
    uses: log
    with: { message: "\${{ steps.chats.output[0].id }} archive=\${{ steps.chats.output[0].archive }}" }
`,
      'flows/fix.test.yaml': `cases:
  - name: corrected and archived
    flow: fix
    timeout: 1h
    messages:
      - { chatId: ${ALICE}, type: incoming, idMessage: ASK0000000000001, typeMessage: textMessage, textMessage: "When is lunch?" }
    expect:
      status: succeeded
      steps:
        fix: { output: { idMessage: { $match: "^[0-9A-F]{32}$" } } }
        seen: { output: { message: "${ALICE} archive=true" } }
      local:
        outgoing: [{ chatId: ${ALICE}, textMessage: "Lunch at 8", isEdited: true }]
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('on.notification typeMessage editedMessage: an edit starts the flow, with the edit as its event', async () => {
    const r = await flowTest({
      'flows/audit.yaml': `name: audit
on:
  notification: { type: outgoingAPIMessageReceived, typeMessage: editedMessage }
steps:
  - id: seen
    uses: log
    with: { message: "\${{ event.messageData.editedMessageData.stanzaId }}: \${{ event.messageData.editedMessageData.textMessage }}" }
`,
      'flows/audit.test.yaml': `cases:
  - name: an edit
    flow: audit
    event:
      typeWebhook: outgoingAPIMessageReceived
      idMessage: EDIT000000000001
      senderData: { chatId: ${ALICE}, sender: ${ALICE} }
      messageData: { typeMessage: editedMessage, editedMessageData: { textMessage: "Lunch at 8", stanzaId: SENT000000000001 } }
    expect: { status: succeeded, steps: { seen: { output: { message: "SENT000000000001: Lunch at 8" } } } }
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);
});
