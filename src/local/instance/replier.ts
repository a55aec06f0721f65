/**
 * Scripted answers of the simulated network (`network.accounts[].replies`):
 * an account with replies answers the first message an instance sends it,
 * each reply `afterMs` after that message was sent, on the service's clock.
 *
 * Durable without a file of its own: a reply's idMessage is derived from the
 * message it answers, so after a restart the replies still due are exactly
 * those of the chat's first outgoing message that the history does not hold
 * yet (see {@link Replier.recover}).
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import type { ParsedMessageInput } from '../message-input.js';
import type { Network } from '../network.js';

export interface FirstMessage {
  idMessage: string;
  chatId: string;
  sentAtMs: number;
}

export interface ReplierOptions {
  network: Network;
  clock: Clock;
  logger: Logger;
  /** Whether the history holds this message id. */
  has: (idMessage: string) => boolean;
  /** The chat's first outgoing message, if any. */
  firstOutgoing: (chatId: string) => FirstMessage | undefined;
  /** Stores the reply as an incoming message (and notifies). */
  deliver: (input: ParsedMessageInput) => Promise<void>;
}

export class Replier {
  private readonly stop = new AbortController();
  private readonly scheduled = new Set<string>();
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly opts: ReplierOptions) {}

  /** After a restart: schedules the replies still due. */
  recover(): void {
    for (const chatId of this.opts.network.replyingChats()) {
      const first = this.opts.firstOutgoing(chatId);
      if (first) this.messageSent(first);
    }
  }

  /** A message left the queue: when it is the chat's first, its replies are scheduled. */
  messageSent(m: FirstMessage): void {
    const replies = this.opts.network.repliesOf(m.chatId);
    if (replies.length === 0 || this.opts.firstOutgoing(m.chatId)?.idMessage !== m.idMessage) return;
    replies.forEach((r, i) => {
      const idMessage = replyId(m.idMessage, i);
      if (this.scheduled.has(idMessage) || this.opts.has(idMessage)) return;
      this.scheduled.add(idMessage);
      const at = m.sentAtMs + r.afterMs;
      const input: ParsedMessageInput = {
        chatId: m.chatId,
        type: 'incoming',
        typeMessage: 'textMessage',
        textMessage: r.text,
        idMessage,
        timestamp: Math.floor(at / 1000),
        isForwarded: false,
        forwardingScore: 0,
      };
      const p = this.opts.clock
        .sleep(Math.max(0, at - this.opts.clock.now()), this.stop.signal)
        .then(() => (this.opts.has(idMessage) ? undefined : this.opts.deliver(input)))
        .catch((e: unknown) => {
          if (!this.stop.signal.aborted)
            this.opts.logger.error('local service: a scripted reply could not be stored', { reason: String(e) });
        })
        .finally(() => {
          this.pending.delete(p);
          this.scheduled.delete(idMessage);
        });
      this.pending.add(p);
    });
  }

  async close(): Promise<void> {
    this.stop.abort();
    await Promise.all([...this.pending]);
  }
}

/** The id of reply number `index` to message `idMessage`: the same in every process. */
export function replyId(idMessage: string, index: number): string {
  return createHash('sha256').update(`${idMessage}:reply:${index}`).digest('hex').slice(0, 32).toUpperCase();
}
