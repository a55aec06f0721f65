/**
 * `dialog`: the step a flow's `conversation:` block runs first (the loader
 * adds it, id `dialog`), once per incoming message of a chat and once per
 * idle timeout the sweeper fires. While the chat is handed to a human
 * (engine/conversation/handover.ts: the operator wrote from the phone, or
 * the dialog handed it over) it stays quiet. It is the thin runtime around the PURE
 * transition (engine/conversation/transition.ts):
 *
 * 1. the decision: the session is read and the transition computed ONCE per
 *    run, and kept in the step's durable state before anything is sent (the
 *    outbox); a resumed run carries out the same decision, never a new one;
 * 2. the sends, in order, each journaled once the service took it; a send
 *    the process died in (its intent kept, no journal entry) is looked for at
 *    the service (client/send-lookup.ts) and sent again only when it provably
 *    never arrived, as files.broadcast reconciles;
 * 3. the effects (the opt-out list, a handover) and the session, written last, with the
 *    id of the message applied: a message is applied to a session once, even
 *    when a second run for it comes (the run id already dedups redeliveries).
 */
import { z } from 'zod';
import type { SendMessageRequest } from '../api/types.js';
import { defineAction, type ActionContext } from '../engine/action.js';
import { DIALOG_ACTION } from '../engine/conversation/check.js';
import { dialogMessageOf } from '../engine/conversation/message.js';
import type { Conversation } from '../engine/conversation/schema.js';
import { DIALOG_IDLE_EVENT, sessionKey, type IdleTimer, type Session } from '../engine/conversation/session.js';
import { advance, type Advance, type DialogEvent, type DialogSend } from '../engine/conversation/transition.js';
import { valueParsers } from '../engine/conversation/validators.js';
import type { OptOutRecord } from '../engine/notify/records.js';
import { DIALOG_IDLE_NS, DIALOG_SESSIONS_NS, HANDOVER_NS, OPT_OUT_NS } from '../engine/shared.js';
import { Handovers } from '../engine/conversation/handover.js';
import { DEFAULT_JOURNAL_LAG_MS, lookForSend, sendShape } from '../client/send-lookup.js';
import { optOutKey } from './opt-out.js';
import { normalisePhone } from './phone.js';

export const DIALOG = DIALOG_ACTION;

/**
 * The conversation as the loader validated it (ConversationSchema, with its
 * positions): checked again here only for its shape, since parsing the whole
 * dialog once per message would cost more than the message.
 */
const DialogInput = z
  .strictObject({
    conversation: z.custom<Conversation>((v) => typeof v === 'object' && v !== null && 'states' in v && 'start' in v && 'commands' in v, {
      error: 'expected the conversation: block of the flow (the loader gives it; a flow does not write this step)',
    }),
  })
  .describe("A flow's conversation block (the loader gives it; a flow does not write this step).");

/** The phone rule of the built-in jobs, as a dialog's `expect: phone`: the digits. */
const parsers = valueParsers((text) => {
  const p = normalisePhone(text);
  return p.ok ? p.digits : undefined;
});

/** What the run decided, kept before the first send (the outbox). */
interface Decision extends Advance {
  chatId: string;
  /** The run is an idle timeout's (not a message's). */
  idle?: boolean;
  /** When it was decided, ms: sends looked for after a crash cannot be older. */
  since: number;
}

export interface DialogResult {
  outcome: Advance['outcome'];
  chatId?: string;
  /** The session's state after the message (absent when no session is kept). */
  state?: string;
  status?: Session['status'];
  endReason?: Session['endReason'];
  /** States entered, in order. */
  entered: string[];
  vars?: Record<string, unknown>;
  /** Messages sent. */
  sent: number;
  /** The chat was put on the opt-out list (the stop command). */
  optOut?: boolean;
  /** The chat was handed to a human. */
  handover?: boolean;
}

/** The event of the run as the dialog reads it, or undefined (not an incoming message, nor an idle timeout). */
function dialogEvent(event: Readonly<Record<string, unknown>> | undefined): DialogEvent | undefined {
  if (event?.typeWebhook === DIALOG_IDLE_EVENT && typeof event.chatId === 'string') return { kind: 'idle', chatId: event.chatId };
  const message = dialogMessageOf(event);
  return message ? { kind: 'message', message } : undefined;
}

/** The instance's handovers (engine/conversation/handover.ts), through the action's view of the shared namespace. */
function handoversOf(ctx: ActionContext): Handovers {
  return new Handovers({ store: { kv: () => ctx.shared(HANDOVER_NS) }, clock: ctx.clock, identityFor: () => ctx.instance.identity });
}

async function decide(ctx: ActionContext, dialog: Conversation, event: DialogEvent, key: string): Promise<Decision> {
  let d = await ctx.state.get<Decision>('decision');
  if (d) return d;
  const prev = await ctx.shared(DIALOG_SESSIONS_NS).get<Session>(key);
  const now = ctx.clock.now();
  const chatId = event.kind === 'idle' ? event.chatId : event.message.chatId;
  const h = await handoversOf(ctx).active(ctx.instanceName, chatId);
  const ev: DialogEvent = h ? { ...event, handover: h.until === undefined ? {} : { until: h.until } } : event;
  const adv = advance(dialog, prev, ev, { now, flow: ctx.run.flow, render: (v, scope) => ctx.render(v, scope), parsers });
  d = { ...adv, chatId, since: now, ...(event.kind === 'idle' ? { idle: true } : {}) };
  await ctx.state.set('decision', d);
  return d;
}

function request(chatId: string, s: DialogSend): { method: DialogSend['method']; body: Record<string, unknown> } {
  const { method, ...rest } = s;
  return { method, body: { chatId, ...rest } };
}

/** Whether a send the process died in reached the service: looked for once the journal lag allows a sure answer. */
async function arrived(ctx: ActionContext, chatId: string, s: DialogSend, since: number, lagMs: number): Promise<boolean> {
  const { method, body } = request(chatId, s);
  const shape = sendShape(method, body, since);
  // A kind that cannot be looked for may have gone out: it is not sent again (every kind a dialog sends can be).
  if (!shape) return true;
  let found = await lookForSend(ctx.client, shape, { clockSkewMs: 5000, signal: ctx.signal });
  if ('absent' in found && ctx.clock.now() < since + lagMs) {
    await ctx.wait({
      until: since + lagMs,
      reason: `the service's journal lag, before looking for an interrupted send to ${chatId}`,
      key: 'lag',
    });
    found = await lookForSend(ctx.client, shape, { clockSkewMs: 5000, signal: ctx.signal });
  }
  if ('unknown' in found) ctx.logger.warn(`${DIALOG}: an interrupted send to ${chatId} could not be looked for: not sent again`);
  return !('absent' in found);
}

async function call(ctx: ActionContext, chatId: string, s: DialogSend): Promise<string> {
  if (s.method === 'sendMessage')
    return (await ctx.client.sendMessage({ chatId, message: s.message } satisfies SendMessageRequest)).idMessage;
  if (s.method === 'sendInteractiveButtonsReply')
    return (await ctx.client.sendInteractiveButtonsReply({ chatId, body: s.body, buttons: s.buttons })).idMessage;
  return (
    await ctx.client.sendFileByUrl({
      chatId,
      urlFile: s.urlFile,
      fileName: s.fileName,
      ...(s.caption === undefined ? {} : { caption: s.caption }),
    })
  ).idMessage;
}

/** Sends what the decision says, each once: journaled when the service took it; an interrupted one reconciled. */
async function sendAll(ctx: ActionContext, d: Decision, lagMs: number): Promise<void> {
  const done = new Set<number>();
  for await (const e of ctx.journal.replay<{ i: number }>()) done.add(e.i);
  const interrupted = await ctx.state.get<number>('sending');
  for (let i = 0; i < d.sends.length; i++) {
    if (done.has(i)) continue;
    const s = d.sends[i]!;
    if (interrupted === i && (await arrived(ctx, d.chatId, s, d.since, lagMs))) {
      await ctx.journal.append({ i, reconciled: true });
      continue;
    }
    await ctx.state.set('sending', i);
    await ctx.journal.append({ i, idMessage: await call(ctx, d.chatId, s) });
  }
}

/** The opt-out list, the idle timer and the session: written after the sends, each idempotent. */
async function commit(ctx: ActionContext, d: Decision, key: string): Promise<void> {
  const s = d.session;
  if (d.optOut) {
    const list = ctx.shared(OPT_OUT_NS);
    const k = optOutKey(ctx.instance.identity, d.chatId);
    if (!(await list.get<OptOutRecord>(k))) await list.set(k, { at: d.since, runId: ctx.run.id } satisfies OptOutRecord);
  }
  if (d.handover) {
    const reason = d.handover.by === 'command' ? 'the chat asked for a human' : 'the dialog handed the chat over';
    await handoversOf(ctx).begin(ctx.instanceName, d.chatId, { by: d.handover.by, forMs: d.handover.forMs, reason });
  }
  // An idle timeout that found the session moved on leaves it as it is, and its timer as the session says.
  const current = s ?? (d.idle ? await ctx.shared(DIALOG_SESSIONS_NS).get<Session>(key) : undefined);
  if (current) await setTimer(ctx, key, current);
  if (s) await ctx.shared(DIALOG_SESSIONS_NS).set(key, s);
}

/** The session's idle timer (what the idle sweeper reads): set while it is live with an idle time, else gone. */
async function setTimer(ctx: ActionContext, key: string, s: Session): Promise<void> {
  const timers = ctx.shared(DIALOG_IDLE_NS);
  if (s.status === 'ended' || s.idleAt === undefined) return timers.delete(key);
  const timer: IdleTimer = { at: s.idleAt, flow: ctx.run.flow, instance: ctx.instanceName, chatId: s.chatId, seq: s.seq };
  await timers.set(key, timer);
}

function result(d: Decision | undefined): DialogResult {
  if (!d) return { outcome: 'ignored', entered: [], sent: 0 };
  const s = d.session;
  return {
    outcome: d.outcome,
    chatId: d.chatId,
    ...(s ? { state: s.state, status: s.status, vars: s.vars, ...(s.endReason ? { endReason: s.endReason } : {}) } : {}),
    entered: d.entered,
    sent: d.sends.length,
    ...(d.optOut ? { optOut: true } : {}),
    ...(d.handover ? { handover: true } : {}),
  };
}

export const dialog = defineAction({
  name: DIALOG,
  description:
    "A conversation's step (the loader adds it to a flow with a conversation: block): applies the chat's message, or its idle timeout, to its session once, sends what the dialog says, stores the session.",
  input: DialogInput,
  rawInputs: ['conversation'],
  writes: true,
  output: { description: '{ outcome, chatId, state, status, endReason, entered, vars, sent, optOut, handover }' },
  async run(ctx, input): Promise<DialogResult> {
    const ev = dialogEvent(ctx.run.event);
    if (!ev) return result(undefined);
    const chatId = ev.kind === 'idle' ? ev.chatId : ev.message.chatId;
    const key = sessionKey(ctx.instance.identity, ctx.run.flow, chatId);
    const d = await decide(ctx, input.conversation, ev, key);
    // A conversation built without the loader's defaults (older tests, plugins) waits the service's documented lag.
    await sendAll(ctx, d, input.conversation.journalLag ?? DEFAULT_JOURNAL_LAG_MS);
    await commit(ctx, d, key);
    return result(d);
  },
});
