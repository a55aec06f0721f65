/**
 * `waitForReply`: waits durably, up to a deadline, for the chat's next
 * incoming message, so a flow can ask and act on the answer. The messages
 * come from the notification consumer of `msgflow start`, which records each
 * chat's latest incoming messages in the order the service delivers them
 * (a per-chat sequence). What counts as a reply is decided by that order,
 * never by comparing clocks: by default the messages recorded after the wait
 * began; with `after:` those after a given message (or, when a flow asks for
 * it, stamped from a given time). The message that started the run never
 * counts. The wait is durable: the run shows `waiting`, and after a restart
 * it goes on with the same reference point and deadline, polled every `poll`.
 */
import { z } from 'zod';
import { FlowError } from '../api/errors.js';
import { defineAction, type ActionContext } from '../engine/action.js';
import { CONSUMERS_NS, INCOMING_NS } from '../engine/shared.js';
import {
  chatPosition,
  firstReply,
  recordedSeq,
  type ConsumerRecord,
  type IncomingMessage,
  type ReplyFrom,
} from '../engine/notify/records.js';
import { duration } from './duration.js';
import { optOutChatId } from './opt-out.js';

export const WAIT_FOR_REPLY = 'waitForReply';

const IsoTime = z.iso.datetime({ offset: true });

const WaitForReplyInput = z
  .strictObject({
    chatId: z
      .union([z.string().min(1), z.number().int().positive()])
      .describe('The chat whose reply is awaited: a chat ID or a phone number.'),
    timeout: duration('How long to wait for the reply (from the moment the step first started). @default 24h').default(86_400_000),
    poll: duration('How often the recorded incoming messages are looked at. @default 5s').default(5000),
    after: z
      .union([z.string().min(1), z.number().int().nonnegative()])
      .optional()
      .describe(
        "What the reply must come after: an incoming message's id (e.g. ${{ event.idMessage }}: replies recorded after the message that started the run, even before the wait began), or a time (ISO 8601, or ms since the epoch: messages the service stamped at or after it, to the second). @default the messages recorded after the wait began",
      ),
  })
  .describe("Waits for the chat's next incoming message.");

type WaitForReplyInput = z.output<typeof WaitForReplyInput>;

export interface WaitForReplyResult {
  /** `replied`, or `timeout` when no message came before the deadline. */
  outcome: 'replied' | 'timeout';
  chatId: string;
  /** The reply's text (text, extended text or a file's caption). */
  text?: string;
  idMessage?: string;
  typeMessage?: string;
  /** When the reply was sent (ISO 8601). */
  at?: string;
  /** How long the wait lasted, ms. */
  waitedMs: number;
}

/** Fixed the first time the step runs: a resumed run keeps them. */
interface WaitState {
  /** When the wait began, ms (for waitedMs). */
  since: number;
  deadline: number;
  /** Replies are recorded after this place in the chat's order. Absent in a wait begun before replies were ordered: then `since` is the time they count from. */
  afterSeq?: number;
  /** `after:` a time: messages stamped from then count. */
  fromMs?: number;
}

/** The place in the chat replies must come after, from `after:` or, by default, the chat's position now. */
async function referencePoint(ctx: ActionContext, chatId: string, after: WaitForReplyInput['after']): Promise<Partial<WaitState>> {
  const incoming = ctx.shared(INCOMING_NS);
  const identity = ctx.instance.identity;
  if (after === undefined) return { afterSeq: await chatPosition(incoming, identity, chatId) };
  if (typeof after === 'number') return { fromMs: after };
  if (IsoTime.safeParse(after).success) return { fromMs: Date.parse(after) };
  const seq = await recordedSeq(incoming, identity, chatId, after);
  if (seq === undefined) {
    throw new FlowError('ACTION_INPUT_INVALID', {
      action: WAIT_FOR_REPLY,
      field: 'after',
      reason: `message ${after} is not an incoming message recorded for chat ${chatId} (give the id of one of its incoming messages, e.g. \${{ event.idMessage }}, or a time)`,
    });
  }
  return { afterSeq: seq };
}

async function waitState(ctx: ActionContext, chatId: string, input: WaitForReplyInput): Promise<WaitState> {
  let st = await ctx.state.get<WaitState>('reply-wait');
  if (!st) {
    const since = ctx.clock.now();
    st = { since, deadline: since + input.timeout, ...(await referencePoint(ctx, chatId, input.after)) };
    await ctx.state.set('reply-wait', st);
  }
  return st;
}

/** What counts as a reply: after the reference point, never the message that started the run. */
function replyFrom(ctx: ActionContext, st: WaitState): ReplyFrom {
  const trigger = ctx.run.event?.idMessage;
  const exclude = typeof trigger === 'string' ? { exclude: trigger } : {};
  if (st.afterSeq !== undefined) return { afterSeq: st.afterSeq, ...exclude };
  return { fromMs: st.fromMs ?? st.since, ...exclude };
}

async function warnWithoutConsumer(ctx: ActionContext): Promise<void> {
  const c = await ctx.shared(CONSUMERS_NS).get<ConsumerRecord>(ctx.instance.identity);
  if (!c) {
    ctx.logger.warn(
      `${WAIT_FOR_REPLY}: no notification consumer has run for instance ${ctx.instance.name}: replies are seen only while msgflow start consumes its notifications (see docs/notifications.md)`,
    );
  }
}

function result(chatId: string, st: WaitState, now: number, m?: IncomingMessage): WaitForReplyResult {
  if (!m) return { outcome: 'timeout', chatId, waitedMs: st.deadline - st.since };
  const out: WaitForReplyResult = {
    outcome: 'replied',
    chatId,
    idMessage: m.idMessage,
    at: new Date(m.at).toISOString(),
    waitedMs: Math.max(0, now - st.since),
  };
  if (m.text !== undefined) out.text = m.text;
  if (m.typeMessage !== undefined) out.typeMessage = m.typeMessage;
  return out;
}

export const waitForReply = defineAction({
  name: WAIT_FOR_REPLY,
  description:
    "Waits (durably, surviving restarts) up to a deadline for the chat's next incoming message: the first recorded after the wait began (or after `after:`), never the message that started the run; outputs the reply, or outcome timeout. Needs msgflow start consuming the instance's notifications.",
  input: WaitForReplyInput,
  output: { description: '{ outcome: replied | timeout, chatId, text, idMessage, typeMessage, at, waitedMs }' },
  async run(ctx, input): Promise<WaitForReplyResult> {
    const chatId = optOutChatId(WAIT_FOR_REPLY, input.chatId);
    await warnWithoutConsumer(ctx);
    const st = await waitState(ctx, chatId, input);
    const from = replyFrom(ctx, st);
    const incoming = ctx.shared(INCOMING_NS);
    const reply = () => firstReply(incoming, ctx.instance.identity, chatId, from);
    const reason = `a reply from ${chatId}`;
    let m = await reply();
    // One wait until the deadline, ended early by a reply (the run says `waiting` once, not once per
    // poll). A loop all the same: a wait persisted by an older version may end before the deadline.
    while (!m && ctx.clock.now() < st.deadline) {
      const lifted = async () => (await reply()) !== undefined;
      await ctx.wait({ until: st.deadline, reason, key: 'reply', lifted, liftedEvery: Math.max(250, input.poll) });
      m = await reply();
    }
    return result(chatId, st, ctx.clock.now(), m);
  },
});
