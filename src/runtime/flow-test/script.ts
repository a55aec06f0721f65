/**
 * Dialog scripts of flow tests (`script:` in a case): the contact's messages,
 * the operator's, virtual time passing, and what the bot must have answered,
 * in order. Each message happens on the case's local service as it would
 * live and reaches the flow through msgflow start's notification consumer,
 * the dispatcher and the engine, with sessions in the case's store: the same
 * path as production. After each message (or wait) the script settles: the
 * notification was handled, every run it started has ended, and the service
 * has sent what they queued; only then are the bot's messages compared.
 */
import { MsgflowError } from '../../api/errors.js';
import type { Message } from '../../api/types.js';
import type { EngineBus } from '../../engine/events.js';
import { Handovers } from '../../engine/conversation/handover.js';
import { sessionKey, type Session } from '../../engine/conversation/session.js';
import type { Flow } from '../../engine/flow/types.js';
import { NOTIFICATION_RUNS_NS } from '../../engine/notify/dispatcher.js';
import { DIALOG_SESSIONS_NS, OPT_OUT_NS, sharedRecords } from '../../engine/shared.js';
import { optOutKey } from '../../engine/notify/records.js';
import { RESUMABLE_STATUSES, type EngineStore, type RunRecord } from '../../store/types.js';
import { parseDuration } from '../../util/duration.js';
import type { VirtualClock } from '../../util/virtual-clock.js';
import { match, type Mismatch } from './match.js';
import type { FlowTestCase, ScriptStep } from './schema.js';

/** What a script acts on: the case's service (through these calls), store, bus, clock and flow. */
export interface ScriptRig {
  flow: Flow;
  store: EngineStore;
  bus: EngineBus;
  clock: VirtualClock;
  /** The identity of the flow's instance (sessions and handovers are keyed by it). */
  identity: string;
  /** Posts a message to the local service (admin `incoming`): it arrives, with its notification. */
  deliver(message: Record<string, unknown>): Promise<Message>;
  /** The chat's history, newest first. */
  history(chatId: string): Promise<Message[]>;
  /** Whether the service's send queue is empty. */
  queueEmpty(): Promise<boolean>;
}

export interface ScriptResult {
  mismatches: Mismatch[];
  /** Every run of the case's flow the script started, ended. */
  runs: RunRecord[];
}

/** How long a step may take to settle, virtual time: a dialog's run and its sends take seconds. */
const SETTLE_LIMIT_MS = 10 * 60_000;
const POLL_MS = 250;

interface ScriptState {
  rig: ScriptRig;
  chatId: string;
  /** Outgoing messages of the chat already compared (`bot:` steps), oldest first. */
  seen: number;
  /** `notification:received` events so far, by notification type. */
  received: Map<string, number>;
  mismatches: Mismatch[];
}

/** Runs a case's script; the case's flow must have a conversation. */
export async function runScript(rig: ScriptRig, c: FlowTestCase): Promise<ScriptResult> {
  if (c.event || c.replies) {
    throw new MsgflowError('TEST_CASE_INVALID', {
      reason: `case '${c.name}': a script gives the messages itself: drop event: and replies:`,
    });
  }
  const perRun = (['run', 'steps', 'events', 'elapsed', 'reports'] as const).filter((k) => c.expect[k] !== undefined);
  if (perRun.length > 0) {
    throw new MsgflowError('TEST_CASE_INVALID', {
      reason: `case '${c.name}': expect.${perRun[0]} is about one run, and a script starts one per message: check with the script's expect: (session, handover, optedOut) and bot: steps`,
    });
  }
  const st: ScriptState = { rig, chatId: `${c.chat}@c.us`, seen: 0, received: new Map(), mismatches: [] };
  const count = (e: { type: string }) => void st.received.set(e.type, (st.received.get(e.type) ?? 0) + 1);
  rig.bus.on('notification:received', count);
  try {
    for (const [i, step] of c.script!.entries()) await runStep(st, step, `script[${i}]`);
  } finally {
    rig.bus.off('notification:received', count);
  }
  const runs = (await rig.store.listRuns({ flow: rig.flow.name })).reverse();
  return { mismatches: st.mismatches, runs };
}

async function runStep(st: ScriptState, step: ScriptStep, at: string): Promise<void> {
  if ('user' in step) {
    const body = typeof step.user === 'string' ? { typeMessage: 'textMessage', textMessage: step.user } : step.user;
    return deliver(st, { ...body, chatId: st.chatId }, at);
  }
  if ('press' in step) return deliver(st, await pressOf(st, step.press, at), at);
  if ('operator' in step)
    return deliver(st, { chatId: st.chatId, type: 'outgoing', typeMessage: 'textMessage', textMessage: step.operator }, at);
  if ('wait' in step) {
    await st.rig.clock.sleep(parseDuration(step.wait)!);
    return settle(st, at);
  }
  if ('bot' in step) return expectBot(st, step.bot, at);
  return expectState(st, step.expect, at);
}

/**
 * A message arrives; the script goes on once its notification was handled
 * (counted by type: the statuses of the bot's own messages come and go
 * meanwhile) and what it started is done.
 */
async function deliver(st: ScriptState, message: Record<string, unknown>, at: string): Promise<void> {
  const type = message.type === 'outgoing' ? 'outgoingMessageReceived' : 'incomingMessageReceived';
  const before = st.received.get(type) ?? 0;
  await st.rig.deliver(message);
  await until(st, at, `its ${type} notification to be handled`, () => (st.received.get(type) ?? 0) > before);
  await settle(st, at);
}

/** Waits until no run of the flow is live or decided-but-not-started, and the send queue is empty. */
async function settle(st: ScriptState, at: string): Promise<void> {
  const { store, flow } = st.rig;
  const pending = store.kv(NOTIFICATION_RUNS_NS);
  await until(st, at, `the runs of ${flow.name} to end and their messages to go out`, async () => {
    const live = await store.listRuns({ flow: flow.name, status: RESUMABLE_STATUSES });
    if (live.length > 0 || (await pending.entries()).length > 0) return false;
    return st.rig.queueEmpty();
  });
}

async function until(st: ScriptState, at: string, what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  const { clock } = st.rig;
  const limit = clock.now() + SETTLE_LIMIT_MS;
  while (!(await done())) {
    if (clock.now() >= limit)
      throw new MsgflowError('TEST_CASE_INVALID', {
        reason: `${at}: waited ${SETTLE_LIMIT_MS / 60_000} minutes of virtual time for ${what}`,
      });
    await clock.sleep(POLL_MS);
  }
}

/** The bot's messages in the chat, oldest first. */
async function botMessages(st: ScriptState): Promise<Message[]> {
  return (await st.rig.history(st.chatId)).filter((m) => m.type === 'outgoing' && m.sendByApi === true).reverse();
}

/** A button press of the bot's last buttons message: the buttonsResponseMessage the contact's phone sends. */
async function pressOf(st: ScriptState, buttonId: string, at: string): Promise<Record<string, unknown>> {
  const last = (await botMessages(st)).filter((m) => m.interactiveButtonsReply).at(-1);
  const button = last?.interactiveButtonsReply?.buttons.find((b) => b.buttonId === buttonId);
  if (!last || !button) {
    const ids = last?.interactiveButtonsReply?.buttons.map((b) => b.buttonId).join(', ');
    throw new MsgflowError('TEST_CASE_INVALID', {
      reason: `${at}: press '${buttonId}': ${last ? `the bot's last buttons message has ${ids}` : 'the bot sent no buttons message'}`,
    });
  }
  const buttonsResponseMessage = { stanzaId: last.idMessage, selectedButtonId: buttonId, selectedButtonText: button.buttonText };
  return { chatId: st.chatId, typeMessage: 'buttonsResponseMessage', buttonsResponseMessage };
}

/** What a `bot:` step compares: the message's text, button labels, file name and kind. */
function view(m: Message): Record<string, unknown> {
  const b = m.interactiveButtonsReply;
  return {
    typeMessage: m.typeMessage,
    text: b ? b.body : (m.textMessage ?? m.caption),
    ...(b ? { buttons: b.buttons.map((x) => x.buttonText) } : {}),
    ...(m.fileName === undefined ? {} : { file: m.fileName }),
  };
}

async function expectBot(st: ScriptState, expected: Extract<ScriptStep, { bot: unknown }>['bot'], at: string): Promise<void> {
  const unseen = (await botMessages(st)).slice(st.seen);
  if (expected === 'nothing') {
    if (unseen.length > 0) st.mismatches.push({ path: `${at}.bot`, expected: 'nothing', actual: unseen.map(view), note: 'the bot sent' });
    st.seen += unseen.length;
    return;
  }
  const next = unseen[0];
  if (!next) {
    st.mismatches.push({ path: `${at}.bot`, expected, actual: undefined, note: 'the bot sent nothing more' });
    return;
  }
  st.seen++;
  st.mismatches.push(...match(expected, view(next), `${at}.bot`));
}

async function expectState(st: ScriptState, ex: Extract<ScriptStep, { expect: unknown }>['expect'], at: string): Promise<void> {
  const { store, clock, flow, identity } = st.rig;
  if (ex.session !== undefined) {
    const s = await sharedRecords(store, DIALOG_SESSIONS_NS).get(sessionKey(identity, flow.name, st.chatId));
    if (ex.session === null) st.mismatches.push(...match(null, s ?? null, `${at}.expect.session`));
    else st.mismatches.push(...match(ex.session, s satisfies Session | undefined, `${at}.expect.session`));
  }
  if (ex.handover !== undefined) {
    const h = await new Handovers({ store, clock, identityFor: () => identity }).active(flow.instance, st.chatId);
    st.mismatches.push(...match(ex.handover, h !== undefined, `${at}.expect.handover`));
  }
  if (ex.optedOut !== undefined) {
    const onList = await sharedRecords(store, OPT_OUT_NS).get(optOutKey(identity, st.chatId));
    st.mismatches.push(...match(ex.optedOut, onList !== undefined, `${at}.expect.optedOut`));
  }
}
