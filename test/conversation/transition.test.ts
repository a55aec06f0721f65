import { describe, expect, it } from 'vitest';
import { loadFlowFile } from '../../src/engine/flow/load.js';
import { advance, type Advance } from '../../src/engine/conversation/transition.js';
import type { Session } from '../../src/engine/conversation/session.js';
import type { DialogMessage } from '../../src/engine/conversation/message.js';
import { dialogMessageOf } from '../../src/engine/conversation/message.js';
import { advanceContext, loadYaml, MENU_BOT, opts, REPO, says } from './helpers.js';

const welcome = loadFlowFile(MENU_BOT, opts(REPO)).conversation!;
const T0 = Date.parse('2026-01-05T08:00:00Z');
const MIN = 60_000;

/** Feeds messages one after another, a minute apart, each to the session the one before left. */
function chat(dialog = welcome, ...messages: DialogMessage[]): Advance[] {
  let s: Session | undefined;
  return messages.map((m, i) => {
    const a = advance(dialog, s, { kind: 'message', message: m }, advanceContext(T0 + i * MIN, 'welcome'));
    s = a.session ?? s;
    return a;
  });
}

const press = (buttonId: string, text: string): DialogMessage => ({
  ...says(text),
  kind: 'text',
  typeMessage: 'buttonsResponseMessage',
  choices: [buttonId, text],
});

describe('a dialog transition (pure: session + message -> next session and sends)', () => {
  it('ignores a chat without a session until the opener, which enters the start state and sends its buttons', () => {
    const [ignored, opened] = chat(welcome, says('what?'), says('Hi'));
    expect(ignored).toMatchObject({ outcome: 'ignored', session: undefined, sends: [] });
    expect(opened).toMatchObject({ outcome: 'started', entered: ['menu'], session: { state: 'menu', status: 'active', seq: 1 } });
    expect(opened!.sends).toEqual([
      {
        method: 'sendInteractiveButtonsReply',
        body: 'Hello! What can we do for you? Press a button, or reply 1 or 2.',
        buttons: [
          { buttonId: 'brochure', buttonText: 'Brochure' },
          { buttonId: 'person', buttonText: 'Talk to a person' },
        ],
      },
    ]);
    expect(opened!.session!.idleAt).toBe(T0 + MIN + 30 * MIN);
  });

  it('follows a button, validates an email (fallback on a bad one), stores it and ends with the file and a closing text', () => {
    const steps = chat(welcome, says('hi'), press('brochure', 'Brochure'), says('not an email'), says(' Ann@Example.COM '));
    expect(steps.map((s) => s.outcome)).toEqual(['started', 'moved', 'fallback', 'ended']);
    expect(steps[2]!.sends).toEqual([{ method: 'sendMessage', message: expect.stringMatching(/does not look like an email/) }]);
    const last = steps[3]!;
    expect(last.session).toMatchObject({
      state: 'brochure',
      status: 'ended',
      endReason: 'end',
      vars: { email: 'ann@example.com' },
      history: ['menu', 'email'],
    });
    expect(last.sends).toEqual([
      {
        method: 'sendFileByUrl',
        urlFile: 'http://local/_local/static/brochure.pdf',
        fileName: 'brochure.pdf',
        caption: 'Here is our brochure.',
      },
      { method: 'sendMessage', message: 'Thank you! We will also write to ann@example.com. Write MENU any time to start again.' },
    ]);
    expect(last.session!.idleAt).toBeUndefined();
  });

  it('applies a message once: the same message id again changes nothing', () => {
    const hi = says('hi');
    const [first, again] = chat(welcome, hi, hi);
    expect(first!.outcome).toBe('started');
    expect(again).toEqual({ session: undefined, sends: [], outcome: 'duplicate', entered: [] });
  });

  it('gives up after the fallback retries: the menu hands over; while handed over the chat gets no answer', () => {
    const steps = chat(welcome, says('hi'), says('??'), says('???'), says('????'));
    expect(steps.map((s) => s.outcome)).toEqual(['started', 'fallback', 'fallback', 'fallback']);
    expect(steps[3]).toMatchObject({ handover: { forMs: 7_200_000, by: 'dialog' }, session: { status: 'handover' } });
    expect(steps[3]!.sends).toEqual([{ method: 'sendMessage', message: 'A colleague will answer you here shortly.' }]);
    const until = T0 + 3 * MIN + 120 * MIN;
    const handedOver = { kind: 'message' as const, message: says('hello?'), handover: { until } };
    const quiet = advance(welcome, steps[3]!.session, handedOver, advanceContext(T0 + 4 * MIN));
    expect(quiet).toMatchObject({ outcome: 'quiet', sends: [], session: { status: 'handover', idleAt: until + 30 * MIN } });
    // The idle time during a handover moves past its end.
    const idle = advance(
      welcome,
      { ...quiet.session!, idleAt: T0 + 34 * MIN },
      { kind: 'idle', chatId: quiet.session!.chatId, handover: { until } },
      advanceContext(T0 + 34 * MIN),
    );
    expect(idle).toMatchObject({ outcome: 'quiet', sends: [], session: { idleAt: until + 30 * MIN } });
    // Once the handover is over the chat is the bot's again, in the state it was in.
    const after = advance(welcome, quiet.session, { kind: 'message', message: says('1') }, advanceContext(until + MIN));
    expect(after).toMatchObject({ outcome: 'moved', entered: ['email'], session: { status: 'active' } });
  });

  it('understands restart, back, stop and operator in every state', () => {
    const [, , back] = chat(welcome, says('hi'), says('1'), says('BACK'));
    expect(back).toMatchObject({ outcome: 'command', entered: ['menu'], session: { state: 'menu', history: [] } });
    const [, , , restart] = chat(welcome, says('hi'), says('1'), says('a@b.co'), says('hi'));
    // The session ended in the brochure state: hi opens a new one.
    expect(restart).toMatchObject({ outcome: 'started', session: { vars: {}, seq: 1 } });
    const [, , stop] = chat(welcome, says('hi'), says('1'), says('Stop'));
    expect(stop).toMatchObject({ outcome: 'command', optOut: true, sends: [], session: { status: 'ended', endReason: 'stop' } });
    const [, operator] = chat(welcome, says('hi'), says('operator'));
    expect(operator).toMatchObject({
      outcome: 'command',
      handover: { by: 'command' },
      session: { status: 'handover', quietUntil: T0 + MIN + 120 * MIN },
    });
  });

  it('ends a silent session at its idle time with the goodbye, and leaves a session that moved on alone', () => {
    const [opened] = chat(welcome, says('hi'));
    const s = opened!.session!;
    const early = advance(welcome, s, { kind: 'idle', chatId: s.chatId }, advanceContext(s.idleAt! - 1));
    expect(early).toMatchObject({ outcome: 'stayed', session: undefined, sends: [] });
    const due = advance(welcome, s, { kind: 'idle', chatId: s.chatId }, advanceContext(s.idleAt!));
    expect(due).toMatchObject({ outcome: 'ended', session: { status: 'ended', endReason: 'idle' } });
    expect(due.sends).toEqual([{ method: 'sendMessage', message: expect.stringMatching(/30 quiet minutes/) }]);
    // A message after the idle time (before any sweep) finds no live session: only the opener starts one.
    const late = advance(welcome, s, { kind: 'message', message: says('1') }, advanceContext(s.idleAt! + 1));
    expect(late.outcome).toBe('ignored');
  });

  it('matches message kinds, poll votes and every validator, and a session expires', () => {
    const dialog = loadYaml(`name: f
on: { notification: { type: incomingMessageReceived } }
conversation:
  start: ask
  expire: 1h
  states:
    ask:
      say: send something
      on:
        - { type: location, set: { got: location }, goto: ask }
        - { type: file, set: { got: "\${{ message.typeMessage }}" }, goto: ask }
        - { button: [Red, Blue], set: { got: "\${{ message.choices[0] }}" }, goto: ask }
        - { expect: date, set: { date: "\${{ value }}" }, goto: ask }
        - { expect: number, set: { n: "\${{ value }}" }, goto: ask }
        - { expect: phone, set: { phone: "\${{ value }}" }, goto: ask }
`).conversation!;
    const vote = dialogMessageOf({
      typeWebhook: 'incomingMessageReceived',
      idMessage: 'V1',
      senderData: { chatId: '79001112233@c.us' },
      messageData: {
        typeMessage: 'pollUpdateMessage',
        pollMessageData: {
          stanzaId: 'P',
          name: 'Colour?',
          votes: [
            { optionName: 'Blue', optionVoters: ['79001112233@c.us'] },
            { optionName: 'Red', optionVoters: [] },
          ],
        },
      },
    })!;
    const where: DialogMessage = { ...says(''), text: undefined, kind: 'location', typeMessage: 'locationMessage' };
    const photo: DialogMessage = { ...says('look'), kind: 'image', typeMessage: 'imageMessage' };
    const steps = chat(
      dialog,
      says('start'),
      where,
      photo,
      vote,
      says('31.01.2026'),
      says('the 31st of February'),
      says('2,5'),
      says('+7 (900) 111-22-33'),
    );
    expect(steps.map((s) => s.session?.vars)).toEqual([
      {},
      { got: 'location' },
      { got: 'imageMessage' },
      { got: 'Blue' },
      { got: 'Blue', date: '2026-01-31' },
      { got: 'Blue', date: '2026-01-31' },
      { got: 'Blue', date: '2026-01-31', n: 2.5 },
      { got: 'Blue', date: '2026-01-31', n: 2.5, phone: '79001112233' },
    ]);
    expect(steps[5]!.outcome).toBe('stayed');
    const s = steps.at(-1)!.session!;
    const later = advance(dialog, s, { kind: 'message', message: says('12') }, advanceContext(s.startedAt + 60 * MIN));
    expect(later).toMatchObject({ outcome: 'started', session: { vars: {}, seq: 1 } });
  });

  it('keeps a session small: bounded history and clipped recent lines', () => {
    const dialog = loadYaml(`name: f
on: { notification: { type: incomingMessageReceived } }
conversation:
  start: a
  history: 3
  states:
    a: { say: "${'x'.repeat(500)}", on: [{ goto: a }] }
`).conversation!;
    const steps = chat(dialog, ...Array.from({ length: 20 }, () => says('y'.repeat(300))));
    const s = steps.at(-1)!.session!;
    expect(s.history).toEqual(['a', 'a', 'a']);
    expect(s.recent).toHaveLength(6);
    expect(Buffer.byteLength(JSON.stringify(s))).toBeLessThan(1024);
  });
});
