/**
 * Scripted answers of the simulated network (`network.accounts[]`):
 *
 * - `replies`: an account answers the first message an instance sends it,
 *   each reply `afterMs` after that message was sent;
 * - `votes`: it votes on each poll an instance sends it (pollUpdateMessage);
 * - `presses`: it presses a button of each message with reply buttons
 *   (sendInteractiveButtonsReply) an instance sends it (buttonsResponseMessage);
 * - `writes`: it writes first, on its own, `afterMs` after the service starts.
 *
 * All on the service's clock, each delivered as an incoming message with its
 * notification. Durable without a file of its own: an answer's idMessage is
 * derived from the message it answers, so after a restart the answers still
 * due are exactly those of the answered messages that the history does not
 * hold yet (see {@link Replier.recover}).
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { MessageInputSchema, type ParsedMessageInput } from '../message-input.js';
import type { Network } from '../network.js';

export interface FirstMessage {
  idMessage: string;
  chatId: string;
  sentAtMs: number;
  /** Its kind: a poll gets votes, a reply-buttons message presses. @default textMessage */
  typeMessage?: string;
}

export interface ReplierOptions {
  network: Network;
  clock: Clock;
  logger: Logger;
  /** Whether the history holds this message id. */
  has: (idMessage: string) => boolean;
  /** The chat's first outgoing message, if any. */
  firstOutgoing: (chatId: string) => FirstMessage | undefined;
  /** The chat's outgoing messages of one kind (recovery of votes and presses). */
  outgoingOfKind: (chatId: string, typeMessage: string) => FirstMessage[];
  /** Stores the answer as an incoming message (and notifies). */
  deliver: (input: ParsedMessageInput) => Promise<void>;
}

/** One answer due: what arrives, and when. */
interface Due {
  idMessage: string;
  at: number;
  input: ParsedMessageInput;
}

export class Replier {
  private readonly stop = new AbortController();
  private readonly scheduled = new Set<string>();
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly opts: ReplierOptions) {}

  /** After a (re)start: schedules the answers still due, and the messages accounts write first. */
  recover(): void {
    for (const chatId of this.opts.network.replyingChats()) {
      this.writesFirst(chatId);
      const first = this.opts.firstOutgoing(chatId);
      if (first) this.messageSent(first);
      for (const kind of ['pollMessage', 'interactiveButtonsReply']) {
        for (const m of this.opts.outgoingOfKind(chatId, kind)) this.messageSent({ ...m, typeMessage: kind });
      }
    }
  }

  /** A message left the queue: the answers it gets are scheduled. */
  messageSent(m: FirstMessage): void {
    for (const due of this.answersTo(m)) this.schedule(due);
  }

  async close(): Promise<void> {
    this.stop.abort();
    await Promise.all([...this.pending]);
  }

  /** The messages the account behind the chat writes on its own, each `afterMs` from now, unless the history holds it. */
  private writesFirst(chatId: string): void {
    const now = this.opts.clock.now();
    this.opts.network.writesOf(chatId).forEach((w, i) => {
      const idMessage = replyId(`write:${chatId}`, i, 'write');
      const at = now + w.afterMs;
      const content = w.message ?? { typeMessage: 'textMessage', textMessage: w.text };
      const input = MessageInputSchema.parse({
        chatId,
        type: 'incoming',
        isForwarded: false,
        forwardingScore: 0,
        ...content,
        idMessage,
        timestamp: Math.floor(at / 1000),
      });
      this.schedule({ idMessage, at, input });
    });
  }

  /** Every answer the account behind the chat gives to `m`. */
  private answersTo(m: FirstMessage): Due[] {
    const { network } = this.opts;
    const base = { chatId: m.chatId, type: 'incoming' as const, isForwarded: false, forwardingScore: 0 };
    const out: Due[] = [];
    const due = (idMessage: string, afterMs: number, content: Record<string, unknown>) => {
      const at = m.sentAtMs + afterMs;
      const input = MessageInputSchema.parse({ ...base, ...content, idMessage, timestamp: Math.floor(at / 1000) });
      out.push({ idMessage, at, input });
    };
    if (this.opts.firstOutgoing(m.chatId)?.idMessage === m.idMessage) {
      network.repliesOf(m.chatId).forEach((r, i) => {
        const content = r.message ?? { typeMessage: 'textMessage', textMessage: r.text };
        due(replyId(m.idMessage, i), r.afterMs, content);
      });
    }
    if (m.typeMessage === 'pollMessage') {
      network.votesOf(m.chatId).forEach((v, i) => {
        due(replyId(m.idMessage, i, 'vote'), v.afterMs, {
          typeMessage: 'pollUpdateMessage',
          vote: { stanzaId: m.idMessage, options: v.options },
        });
      });
    }
    if (m.typeMessage === 'interactiveButtonsReply') {
      network.pressesOf(m.chatId).forEach((p, i) => {
        const response = { stanzaId: m.idMessage, selectedButtonId: p.buttonId };
        due(replyId(m.idMessage, i, 'press'), p.afterMs, { typeMessage: 'buttonsResponseMessage', buttonsResponseMessage: response });
      });
    }
    return out;
  }

  private schedule({ idMessage, at, input }: Due): void {
    if (this.scheduled.has(idMessage) || this.opts.has(idMessage)) return;
    this.scheduled.add(idMessage);
    const p = this.opts.clock
      .sleep(Math.max(0, at - this.opts.clock.now()), this.stop.signal)
      .then(() => (this.opts.has(idMessage) ? undefined : this.opts.deliver(input)))
      .catch((e: unknown) => {
        if (!this.stop.signal.aborted) this.opts.logger.error('local service: a scripted reply could not be stored', { reason: String(e) });
      })
      .finally(() => {
        this.pending.delete(p);
        this.scheduled.delete(idMessage);
      });
    this.pending.add(p);
  }
}

/**
 * The id of answer number `index` (of a kind: `reply`, `vote`, `press`) to
 * message `idMessage`: the same in every process.
 */
export function replyId(idMessage: string, index: number, kind: 'reply' | 'vote' | 'press' | 'write' = 'reply'): string {
  return createHash('sha256').update(`${idMessage}:${kind}:${index}`).digest('hex').slice(0, 32).toUpperCase();
}
