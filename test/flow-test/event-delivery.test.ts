/**
 * A flow test drives the same path as `msgflow start`: a case's `event:` is a
 * real incoming message of the in-process local service, delivered through
 * the notification consumer and dispatcher a daemon uses, so the chat's
 * history, lastIncomingMessages and waitForReply see it exactly as live.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const HI = `    event:
      typeWebhook: incomingMessageReceived
      idMessage: HI0000000000000001
      senderData: { chatId: 79001112233@c.us, sender: 79001112233@c.us, senderName: Alice }
      messageData: { typeMessage: textMessage, textMessageData: { textMessage: hi } }
`;

async function flowTest(files: Record<string, string>) {
  const dir = project({ 'config.yaml': LOCAL_CONFIG, ...files }, 'msgflow-event-');
  dirs.push(dir);
  const r = await cli(['test'], dir);
  return { ...r, out: r.stdout + r.stderr };
}

describe("a flow test's event", () => {
  it('is a real incoming message: in the chat history and lastIncomingMessages, its run started by the notification consumer', async () => {
    const r = await flowTest({
      'flows/seen.yaml': `name: seen
on:
  notification: { type: incomingMessageReceived, text: "^hi$" }
steps:
  - id: history
    uses: getChatHistory
    with: { chatId: "\${{ event.senderData.chatId }}", count: 10 }
  - id: incoming
    uses: lastIncomingMessages
    with: { minutes: 5 }
`,
      'flows/seen.test.yaml': `cases:
  - name: the trigger is in the history
    flow: seen
${HI}    expect:
      status: succeeded
      run: { trigger: notification }
      steps:
        history: { output: [{ idMessage: HI0000000000000001, type: incoming, textMessage: hi }] }
        incoming: { output: [{ idMessage: HI0000000000000001, chatId: 79001112233@c.us }] }
      local:
        chats:
          79001112233@c.us: [{ idMessage: HI0000000000000001, textMessage: hi }]
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('is heard by waitForReply as live: an ask-and-wait flow triggered by hi gets the next message, not hi', async () => {
    const r = await flowTest({
      'flows/ask.yaml': `name: ask
on:
  notification: { type: incomingMessageReceived, text: "^hi$" }
steps:
  - id: menu
    uses: sendMessage
    with: { chatId: "\${{ event.senderData.chatId }}", message: "Reply 1 for the brochure" }
  - id: answer
    uses: waitForReply
    with: { chatId: "\${{ event.senderData.chatId }}", timeout: 10m, poll: 1s }
`,
      'flows/ask.test.yaml': `cases:
  - name: the answer is the reply, not the greeting
    flow: ask
${HI}    replies:
      - { after: 2m, from: 79001112233, text: "1" }
    expect:
      steps:
        answer: { output: { outcome: replied, text: "1" } }
      elapsed: { atLeast: 2m, atMost: 3m }
`,
    });
    expect(r.out).toMatch(/1 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('a state change happens on the instance, and a status is delivered as given: each starts its run through the consumer', async () => {
    const r = await flowTest({
      'flows/logged-out.yaml': `name: logged-out
on:
  notification: { type: stateInstanceChanged }
steps:
  - id: state
    uses: getStateInstance
  - id: said
    uses: log
    with: { message: "\${{ event.stateInstance }}" }
`,
      'flows/logged-out.test.yaml': `cases:
  - name: the instance is logged out
    flow: logged-out
    event: { typeWebhook: stateInstanceChanged, stateInstance: notAuthorized }
    expect:
      run: { trigger: notification }
      steps:
        state: { output: { stateInstance: notAuthorized } }
        said: { output: { message: notAuthorized } }
`,
      'flows/failed.yaml': `name: failed
on:
  notification: { type: outgoingMessageStatus }
steps:
  - id: said
    uses: log
    with: { message: "\${{ event.idMessage }} \${{ event.status }}" }
`,
      'flows/failed.test.yaml': `cases:
  - name: a message failed
    flow: failed
    event: { typeWebhook: outgoingMessageStatus, chatId: 79001112233@c.us, idMessage: ABCDEF0123456789, status: failed, sendByApi: true }
    expect:
      run: { trigger: notification }
      steps:
        said: { output: { message: ABCDEF0123456789 failed } }
`,
    });
    expect(r.out).toMatch(/2 passed, 0 failed/);
    expect(r.code).toBe(0);
  }, 60_000);

  it('an event the service cannot take is an error naming the case and the field', async () => {
    const r = await flowTest({
      'flows/seen.yaml': `name: seen
on:
  notification: { type: incomingMessageReceived }
steps:
  - id: said
    uses: log
    with: { message: hello }
`,
      'flows/seen.test.yaml': `cases:
  - name: a short id
    flow: seen
    event:
      typeWebhook: incomingMessageReceived
      idMessage: SHORT
      senderData: { chatId: 79001112233@c.us }
      messageData: { typeMessage: textMessage, textMessageData: { textMessage: hi } }
`,
    });
    expect(r.out).toMatch(/case 'a short id' event: .*idMessage.*16-64/);
    expect(r.code).toBe(1);
  }, 60_000);
});
