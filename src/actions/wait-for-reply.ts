/**
 * `waitForReply`: waits durably, up to a deadline, for the chat's next
 * incoming message after the wait began, so a flow can ask and act on the
 * answer. The messages come from the notification consumer of `msgflow
 * start` (it records each chat's latest incoming messages); the wait is a
 * durable wait (the run shows `waiting`, and after a restart it goes on with
 * the same start and deadline), polled every `poll`.
 */
import { z } from 'zod';
import { defineAction, type ActionContext } from '../engine/action.js';
import { CONSUMERS_NS, INCOMING_NS, firstReplySince, type ConsumerRecord, type IncomingMessage } from '../engine/notify/records.js';
import { duration } from './duration.js';
import { optOutChatId } from './opt-out.js';

export const WAIT_FOR_REPLY = 'waitForReply';

const WaitForReplyInput = z
  .strictObject({
    chatId: z
      .union([z.string().min(1), z.number().int().positive()])
      .describe('The chat whose reply is awaited: a chat ID or a phone number.'),
    timeout: duration('How long to wait for the reply (from the moment the step first started). @default 24h').default(86_400_000),
    poll: duration('How often the recorded incoming messages are looked at. @default 5s').default(5000),
  })
  .describe("Waits for the chat's next incoming message.");

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

interface WaitState {
  since: number;
  deadline: number;
}

/** The wait's start and deadline, fixed the first time (a resumed run keeps them). */
async function waitState(ctx: ActionContext, timeout: number): Promise<WaitState> {
  let st = await ctx.state.get<WaitState>('reply-wait');
  if (!st) {
    const since = ctx.clock.now();
    st = { since, deadline: since + timeout };
    await ctx.state.set('reply-wait', st);
  }
  return st;
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
    "Waits (durably, surviving restarts) up to a deadline for the chat's next incoming message after the wait began; outputs the reply, or outcome timeout. Needs msgflow start consuming the instance's notifications.",
  input: WaitForReplyInput,
  output: { description: '{ outcome: replied | timeout, chatId, text, idMessage, typeMessage, at, waitedMs }' },
  async run(ctx, input): Promise<WaitForReplyResult> {
    const chatId = optOutChatId(WAIT_FOR_REPLY, input.chatId);
    const st = await waitState(ctx, input.timeout);
    await warnWithoutConsumer(ctx);
    const incoming = ctx.shared(INCOMING_NS);
    const reason = `waiting for a reply from ${chatId} until ${new Date(st.deadline).toISOString()}`;
    for (;;) {
      const m = await firstReplySince(incoming, ctx.instance.identity, chatId, st.since);
      const now = ctx.clock.now();
      if (m || now >= st.deadline) return result(chatId, st, now, m);
      await ctx.wait({ until: Math.min(now + Math.max(250, input.poll), st.deadline), reason, key: 'reply' });
    }
  },
});
