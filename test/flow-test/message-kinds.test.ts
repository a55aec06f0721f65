/**
 * Flows and the message kinds beyond text: a trigger names the kind it wants
 * (`typeMessage:`), its `text:` reads each kind's own text (a pressed
 * button's, a caption), and the sending actions send every kind, a file of
 * the project included, through the paced queue.
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
  const dir = project({ 'config.yaml': LOCAL_CONFIG, ...files }, 'msgflow-kinds-');
  dirs.push(dir);
  const r = await cli(['test'], dir);
  return { ...r, out: r.stdout + r.stderr };
}

const ALICE = '79001112233@c.us';
const SENDER = `senderData: { chatId: ${ALICE}, sender: ${ALICE}, senderName: Alice }`;
const POLL = `      - { chatId: ${ALICE}, type: outgoing, idMessage: POLL000000000001, typeMessage: pollMessage, pollMessageData: { name: "Lunch?", options: [pizza, sushi] } }\n`;
const VOTE = `    event:
      typeWebhook: incomingMessageReceived
      idMessage: VOTE000000000001
      ${SENDER}
      messageData:
        typeMessage: pollUpdateMessage
        pollMessageData:
          stanzaId: POLL000000000001
          name: "Lunch?"
          votes: [{ optionName: pizza, optionVoters: [${ALICE}] }, { optionName: sushi, optionVoters: [] }]
          multipleAnswers: false
`;
const TALLY = `name: tally
on:
  notification: { type: incomingMessageReceived, typeMessage: pollUpdateMessage }
steps:
  - id: thanks
    uses: sendMessage
    with: { chatId: "\${{ event.senderData.chatId }}", message: "Thanks for voting \${{ event.messageData.pollMessageData.votes[0].optionVoters[0] }}" }
`;

describe('flows and message kinds', () => {
  it('on.notification typeMessage: a vote on a poll starts the flow, with the vote as its event', async () => {
    const r = await flowTest({
      'flows/tally.yaml': TALLY,
      'flows/tally.test.yaml': `cases:
  - name: a vote
    flow: tally
    messages:
${POLL}${VOTE}    expect:
      status: succeeded
      run: { trigger: notification }
      steps:
        thanks: { status: succeeded }
      local:
        outgoing: [{ chatId: ${ALICE}, textMessage: "Thanks for voting ${ALICE}" }]
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('on.notification typeMessage: a message of another kind does not start the flow', async () => {
    const r = await flowTest({
      'flows/tally.yaml': TALLY,
      'flows/tally.test.yaml': `cases:
  - name: a text is not a vote
    flow: tally
    event:
      typeWebhook: incomingMessageReceived
      idMessage: TEXT000000000001
      ${SENDER}
      messageData: { typeMessage: textMessage, textMessageData: { textMessage: pizza } }
`,
    });
    expect(r.out).toMatch(/the event does not match the on\.notification trigger of tally/);
    expect(r.code).not.toBe(0);
  }, 60_000);

  it("on.notification text: a pressed button's text and a file's caption are the message's text", async () => {
    const flow = `name: yes
on:
  notification: { type: incomingMessageReceived, text: "^yes" }
steps:
  - id: seen
    uses: log
    with: { message: "\${{ event.messageData.typeMessage }}" }
`;
    const press = `    event:
      typeWebhook: incomingMessageReceived
      idMessage: PRESS00000000001
      ${SENDER}
      messageData: { typeMessage: buttonsResponseMessage, buttonsResponseMessage: { stanzaId: BUTTONS000000001, selectedButtonId: "1", selectedButtonText: "Yes, please" } }
`;
    const photo = `    event:
      typeWebhook: incomingMessageReceived
      idMessage: PHOTO00000000001
      ${SENDER}
      messageData: { typeMessage: imageMessage, fileMessageData: { downloadUrl: "https://files.example/p.jpg", caption: "yes, this one", fileName: p.jpg, mimeType: image/jpeg } }
`;
    const r = await flowTest({
      'flows/yes.yaml': flow,
      'flows/yes.test.yaml': `cases:
  - name: a pressed button
    flow: yes
${press}    expect: { steps: { seen: { output: { message: buttonsResponseMessage } } } }
  - name: a captioned photo
    flow: yes
${photo}    expect: { steps: { seen: { output: { message: imageMessage } } } }
`,
    });
    expect(r.out).toMatch(/2 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('the sending actions: a file of the project, a poll, a location and a contact, each a message of its kind', async () => {
    const r = await flowTest({
      'files/menu.pdf': '%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n',
      'flows/kinds.yaml': `name: kinds
steps:
  - id: file
    uses: sendFileByUpload
    with: { chatId: ${ALICE}, file: files/menu.pdf, caption: "Our menu" }
  - id: poll
    uses: sendPoll
    with: { chatId: ${ALICE}, message: "Lunch?", options: [{ optionName: pizza }, { optionName: sushi }] }
  - id: where
    uses: sendLocation
    with: { chatId: ${ALICE}, nameLocation: Office, latitude: 55.75, longitude: 37.61 }
  - id: who
    uses: sendContact
    with: { chatId: ${ALICE}, contact: { phoneContact: 79005550000, firstName: Ghost } }
`,
      'flows/kinds.test.yaml': `cases:
  - name: every kind sent
    flow: kinds
    timeout: 1h
    expect:
      status: succeeded
      steps:
        file: { output: { urlFile: { $match: "/files/[0-9a-f]{32}/menu\\\\.pdf$" } } }
      local:
        outgoing:
          - { typeMessage: documentMessage, fileName: menu.pdf, caption: "Our menu", downloadUrl: { $match: "/files/[0-9a-f]{32}/menu\\\\.pdf$" } }
          - { typeMessage: pollMessage, pollMessageData: { name: "Lunch?" } }
          - { typeMessage: locationMessage, location: { nameLocation: Office } }
          - { typeMessage: contactMessage, contact: { displayName: Ghost } }
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('a sendFileByUpload step naming a file that is not there fails, naming it', async () => {
    const r = await flowTest({
      'flows/missing.yaml': `name: missing
steps:
  - id: file
    uses: sendFileByUpload
    with: { chatId: ${ALICE}, file: files/nope.pdf }
`,
      'flows/missing.test.yaml': `cases:
  - name: no such file
    flow: missing
    expect: { status: failed, steps: { file: { error: { message: { $match: "'file' files/nope\\\\.pdf: no such file in the project" } } } } }
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
  }, 60_000);
});
