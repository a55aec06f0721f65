import { describe, expect, it } from 'vitest';
import { loadFlowFile } from '../../src/engine/flow/load.js';
import { errorLines, loadYaml, MENU_BOT, opts, REPO } from './helpers.js';

const HEAD = `name: f
on: { notification: { type: incomingMessageReceived } }
`;

describe('conversation blocks in flow files', () => {
  it('loads the welcome menu bot with its dialog step first and its own steps after', () => {
    const flow = loadFlowFile(MENU_BOT, opts(REPO));
    expect(flow.steps.map((s) => [s.id, s.uses])).toEqual([
      ['dialog', 'dialog'],
      ['lead', 'log'],
    ]);
    expect(flow.conversation).toMatchObject({ start: 'menu', idle: { after: 1_800_000 }, handover: { for: 7_200_000 } });
    expect(flow.steps[0]!.location).toMatch(/welcome\.yaml:\d+:\d+$/);
  });

  it('takes a flow with a conversation and no steps of its own', () => {
    const flow = loadYaml(`${HEAD}conversation:\n  start: a\n  states:\n    a: { say: hi, end: true }\n`);
    expect(flow.steps.map((s) => s.id)).toEqual(['dialog']);
    expect(flow.conversation!.commands).toEqual({
      restart: '^(restart|start over)$',
      back: '^back$',
      stop: '^(stop|unsubscribe)$',
      operator: '^(operator|human)$',
    });
  });

  it('names every mistake of a dialog with file:line:col', () => {
    const lines = errorLines(`name: f
on:
  notification: { type: incomingMessageReceived, text: "^hi$" }
conversation:
  start: menu
  opener: "(hi"
  states:
    menu:
      say: "Hi \${{ sesion.vars.x }}"
      on:
        - { text: "^1$", goto: emial, set: { x: "\${{ value }}" } }
        - { expect: phonenumber, goto: email }
        - { text: "[", goto: email }
      fallback: { retries: 1, goto: nowhere }
    email:
      say: mail
    orphan:
      say: never
      gotoo: menu
steps:
  - id: after
    uses: log
    with: { message: "\${{ session.state }} \${{ steps.dialog.output.state }}" }
`);
    expect(lines).toEqual([
      'F:3:56 on.notification.text: a conversation needs every message of the chat (its answers too): put the pattern in conversation.opener, which starts a session',
      'F:6:11 conversation.opener: invalid regular expression /(hi/: Unterminated group',
      "F:9:20 conversation.states.menu.say: expression error in ${{ sesion.vars.x }}: unknown name 'sesion' (did you mean 'session'?); an expression starts from inputs, env, steps, item, index, run, local, event, row, session, message, value, secrets",
      "F:11:32 conversation.states.menu.on[0].goto: unknown state 'emial' (did you mean 'email'?); states: menu, email, orphan",
      "F:11:54 conversation.states.menu.on[0].set.x: expression error in ${{ value }}: 'value' is only set in a transition with expect: (the value it parsed)",
      'F:12:21 conversation.states.menu.on[1].expect: Invalid option: expected one of "number"|"email"|"date"|"phone"|"text"',
      'F:13:19 conversation.states.menu.on[2].text: invalid regular expression /[/: Unterminated character class',
      "F:14:37 conversation.states.menu.fallback.goto: unknown state 'nowhere'; states: menu, email, orphan",
      "F:17:5 conversation.states.orphan: state 'orphan' is unreachable: no goto from 'menu' leads to it",
      "F:19:7 conversation.states.orphan.gotoo: unknown key 'gotoo'",
      "F:23:27 steps[0].with.message: expression error in ${{ session.state }}: 'session' is only set in a conversation's templates (say, set, file); a step after the dialog reads steps.dialog.output",
    ]);
  });

  it('refuses a conversation without an incoming-message trigger, and a step that takes the dialog step id', () => {
    expect(
      errorLines(`name: f
on: { schedule: { cron: "0 9 * * *" } }
conversation: { start: a, states: { a: { say: hi } } }
steps:
  - { id: dialog, uses: log, with: { message: x } }
`),
    ).toEqual([
      'F:2:5 on: a conversation is driven by incoming messages: give the flow on: { notification: { type: incomingMessageReceived } }',
      "F:5:11 steps[0].id: step id 'dialog' is the conversation's own step: choose another id",
    ]);
  });

  it('reads steps.dialog in the steps after the dialog, and refuses a flow with neither steps nor a conversation', () => {
    const flow = loadYaml(`${HEAD}conversation: { start: a, states: { a: { say: hi } } }
steps:
  - { id: b, if: "\${{ steps.dialog.output.state == 'a' }}", uses: log, with: { message: x } }
`);
    expect(flow.steps.map((s) => s.id)).toEqual(['dialog', 'b']);
    expect(errorLines(`name: f\n`)).toEqual(['F:1:1 steps: a flow needs at least one step (or a conversation)']);
  });
});
