/**
 * The instance-wide opt-out list: chats that asked not to receive broadcasts
 * (by law and by decency, "STOP" must work). One store record per chat in
 * namespace `opt-out`, keyed `${identity}:${chatId}`, so the list belongs to
 * the instance (its identity), not to a flow or a campaign; files.broadcast
 * skips every chat on it and reports it `optedOut`.
 */
import { z } from 'zod';
import { FlowError } from '../api/errors.js';
import { isChatId, personalChatId } from '../api/chat-id.js';
import { defineAction, type ActionContext, type DurableState } from '../engine/action.js';
import { optOutKey, type OptOutRecord } from '../engine/notify/records.js';
import { OPT_OUT_NS } from '../engine/shared.js';
import { normalisePhone } from './phone.js';

export const OPT_OUT_ADD = 'optOut.add';
export const OPT_OUT_REMOVE = 'optOut.remove';

const OptOutInput = z
  .strictObject({
    chatId: z
      .union([z.string().min(1), z.number().int().positive()])
      .describe(
        'The chat: a chat ID (79001234567@c.us) or a phone number; e.g. ${{ event.senderData.chatId }} in a flow triggered by a notification.',
      ),
  })
  .describe('One chat of the instance-wide opt-out list.');

/** The chat ID of a chatId/phone input; ACTION_INPUT_INVALID when it is neither. */
export function optOutChatId(action: string, raw: string | number): string {
  if (typeof raw === 'string' && raw.includes('@')) {
    if (isChatId(raw.trim())) return raw.trim();
  } else {
    const p = normalisePhone(raw);
    if (p.ok) return personalChatId(p.digits);
  }
  throw new FlowError('ACTION_INPUT_INVALID', { action, field: 'chatId', reason: `'${raw}' is neither a chat ID nor a phone number` });
}

/** The instance's opt-out list (what files.broadcast reads). */
export function optOutList(ctx: Pick<ActionContext, 'shared'>): DurableState {
  return ctx.shared(OPT_OUT_NS);
}

export { optOutKey };

export interface OptOutResult {
  chatId: string;
  /** add: true when the chat was not on the list before; remove: true when it was. */
  changed: boolean;
}

/** optOut.add (`add`) or optOut.remove: one shape, the list change and its wording differ. */
function optOutAction(add: boolean) {
  const name = add ? OPT_OUT_ADD : OPT_OUT_REMOVE;
  return defineAction({
    name,
    description: add
      ? "Adds a chat to the instance's opt-out list: files.broadcast never sends to it again (reported optedOut)."
      : "Removes a chat from the instance's opt-out list (it asked to receive broadcasts again).",
    input: OptOutInput,
    dryRun: true,
    output: {
      description: `{ chatId, changed }: changed is false when the chat was ${add ? 'already' : 'not'} on the list.`,
    },
    async run(ctx, input): Promise<OptOutResult> {
      const chatId = optOutChatId(name, input.chatId);
      const list = optOutList(ctx);
      const key = optOutKey(ctx.instance.identity, chatId);
      const onList = Boolean(await list.get<OptOutRecord>(key));
      const changed = add !== onList;
      if (changed && !ctx.run.dryRun) {
        if (add) await list.set(key, { at: ctx.clock.now(), runId: ctx.run.id } satisfies OptOutRecord);
        else await list.delete(key);
        ctx.logger.info(
          add
            ? `${chatId} opted out of broadcasts on instance ${ctx.instance.name}`
            : `${chatId} is back on broadcasts of instance ${ctx.instance.name}`,
        );
      }
      return { chatId, changed };
    },
  });
}

export const optOutAdd = optOutAction(true);
export const optOutRemove = optOutAction(false);
