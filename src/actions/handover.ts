/**
 * chat.handover / chat.release: a flow hands a chat to a human, or gives it
 * back to the bot (engine/conversation/handover.ts). While handed over, flows
 * triggered by that chat's messages start nothing (unless they say
 * `handover: ignore`), as when the operator writes from the phone.
 */
import { z } from 'zod';
import { defineAction, type ActionContext } from '../engine/action.js';
import { Handovers, type Handover } from '../engine/conversation/handover.js';
import { HANDOVER_NS } from '../engine/shared.js';
import { duration } from './duration.js';
import { optOutChatId } from './opt-out.js';

export const CHAT_HANDOVER = 'chat.handover';
export const CHAT_RELEASE = 'chat.release';

const ChatId = z
  .union([z.string().min(1), z.number().int().positive()])
  .describe('The chat: a chat ID (79001234567@c.us) or a phone number, e.g. ${{ event.senderData.chatId }}.');

/** The instance's handovers, through the action's own view of the shared namespace. */
function handoversOf(ctx: Pick<ActionContext, 'shared' | 'clock' | 'instance'>): Handovers {
  // The one namespace it reads is HANDOVER_NS, which ctx.shared gives already prefixed.
  return new Handovers({ store: { kv: () => ctx.shared(HANDOVER_NS) }, clock: ctx.clock, identityFor: () => ctx.instance.identity });
}

export const chatHandover = defineAction({
  name: CHAT_HANDOVER,
  description:
    "Hands a chat to a human: flows triggered by its messages start nothing until `for` has passed (or until chat.release, the operator's resume command, msgflow handovers release).",
  input: z.strictObject({
    chatId: ChatId,
    for: duration('How long, e.g. 30m. @default until released').optional(),
    reason: z.string().min(1).max(500).optional().describe('Why, shown by msgflow handovers and the dashboard.'),
  }),
  dryRun: true,
  output: { description: '{ instance, chatId, since, until?, by: api, reason? }: the handover in force.' },
  async run(ctx, input): Promise<Handover | { dryRun: true; chatId: string }> {
    const chatId = optOutChatId(CHAT_HANDOVER, input.chatId);
    if (ctx.run.dryRun) return { dryRun: true, chatId };
    const h = await handoversOf(ctx).begin(ctx.instance.name, chatId, {
      by: 'api',
      ...(input.reason === undefined ? {} : { reason: input.reason }),
      ...(input.for === undefined ? {} : { forMs: input.for }),
    });
    ctx.logger.info(
      `chat ${chatId} on ${ctx.instance.name} is handed over to a human${input.for === undefined ? '' : ` for ${input.for} ms`}`,
    );
    return h;
  },
});

export const chatRelease = defineAction({
  name: CHAT_RELEASE,
  description: 'Gives a chat handed to a human back to the bot.',
  input: z.strictObject({ chatId: ChatId }),
  dryRun: true,
  output: { description: '{ chatId, released }: released is false when the chat was not handed over.' },
  async run(ctx, input): Promise<{ chatId: string; released: boolean }> {
    const chatId = optOutChatId(CHAT_RELEASE, input.chatId);
    const handovers = handoversOf(ctx);
    const released = (await handovers.active(ctx.instance.name, chatId)) !== undefined;
    if (released && !ctx.run.dryRun) await handovers.end(ctx.instance.name, chatId);
    return { chatId, released };
  },
});
