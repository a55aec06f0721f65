/**
 * The persisted send queue of one instance (queue.jsonl, append-only).
 *
 * Records: `enqueue` (written before sendFileByUrl/sendMessage answers), then
 * `done`, `failed` or `drop` (clearMessagesQueue). Replaying them after a crash gives back exactly the messages that
 * were acknowledged and not yet sent. Exactly-once: the release step first
 * asks `isSent(idMessage)` (the history is the truth), so a crash between
 * "appended to history" and "done recorded" does not send the message again.
 *
 * Timing: releases are scheduled against absolute due times
 * (`due[n] = max(enqueuedAt, due[n-1] + interval)`), not chained timeouts, so
 * the timer's small lateness never accumulates into drift.
 */
import { EventEmitter } from 'eventemitter3';
import type { SendFileByUrlRequest } from '../../api/types.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { AppendLog } from '../persist/append-log.js';
import { flatString } from '../../util/flat-string.js';
import { FetchError } from '../media/download.js';
import type { MediaTypeMessage } from '../media/mime-table.js';

export interface QueueEntry {
  idMessage: string;
  chatId: string;
  /**
   * `text`: a sendMessage; absent: a sendFileByUrl or sendFileByUpload
   * (entries written before sendMessage existed have no kind); the others
   * name the sending method (sending.ts), `typing` a sendTyping notice
   * (it holds the queue for its typingTime and leaves no message).
   */
  kind?: 'text' | 'location' | 'contact' | 'poll' | 'buttons' | 'buttonsReply' | 'forward' | 'typing';
  /** The request as queued, chatId aside (the kinds of sending.ts; sendMessage's preview options). */
  payload?: Record<string, unknown>;
  /** sendFileByUpload: the uploaded file in the media store, sent from there (never fetched). */
  fileId?: string;
  /** forwardMessages: the new ids of the forwarded messages, in order (idMessage is the first). */
  messageIds?: string[];
  /** sendMessage's text. */
  message?: string;
  linkPreview?: boolean;
  /** sendFileByUrl only. */
  urlFile?: string;
  fileName?: string;
  /**
   * sendFileByUrl: the message type `fileName` gives (the spec's first rule),
   * fixed when queued so that every view shows the type the file is sent as;
   * absent when the name has no known extension (the fetch decides).
   */
  typeMessage?: MediaTypeMessage;
  caption?: string;
  quotedMessageId?: string;
  typingTime?: number;
  typingType?: SendFileByUrlRequest['typingType'];
  /** ms since the epoch. */
  enqueuedAt: number;
}

export interface FailedEntry extends QueueEntry {
  reason: string;
  failedAt: number;
}

type QueueRecord =
  | { op: 'enqueue'; entry: QueueEntry }
  | { op: 'done'; idMessage: string; dueAt: number; releasedAt: number }
  | { op: 'failed'; entry: QueueEntry; dueAt: number; reason: string; at: number }
  | { op: 'drop'; idMessage: string };

export interface QueueEvents {
  /** A message left the queue: `releasedAt - dueAt` is the scheduling jitter. */
  released: [{ idMessage: string; dueAt: number; releasedAt: number }];
  /** `messageIds`: every message the entry sent (forwardMessages), when more than `idMessage`. */
  sent: [{ idMessage: string; chatId: string; messageIds?: string[] }];
  failed: [{ idMessage: string; chatId: string; reason: string; messageIds?: string[] }];
}

export interface SendQueueOptions {
  file: string;
  /** `file` as named in errors (the instance id hidden). @default file */
  shown?: string;
  clock: Clock;
  /** The interval between two releases, ms (read at every release: setSettings may change it). */
  intervalMs: () => number;
  /** Whether messages may leave now (the instance is authorized); while not, they wait. @default always */
  canRelease?: () => boolean;
  /** Why messages wait while canRelease says no, for a message that expires. @default 'the instance was not authorized' */
  heldBecause?: () => string;
  /** How long a message may wait in the queue before it is dropped as failed, ms. @default 86400000 */
  maxWaitMs?: number;
  /** Fetches the file and appends the message to the history. Throws when the file cannot be sent. */
  send: (entry: QueueEntry, releasedAt: number) => Promise<void>;
  /** Whether the history already holds this message. */
  isSent: (idMessage: string) => boolean;
  /**
   * Called once `send` failed for good, before the failure is told: keeps
   * what the journals show of the message (a file that could not be fetched).
   * @default nothing is kept
   */
  keepFailed?: (entry: QueueEntry, reason: string, failedAt: number) => Promise<void>;
  logger: Logger;
}

/** How many failed entries are kept for inspection. */
const FAILED_KEPT = 100;

export class SendQueue extends EventEmitter<QueueEvents> {
  private readonly log: AppendLog<QueueRecord>;
  private pendingEntries: QueueEntry[] = [];
  /**
   * The pending entries by every message id they carry (getMessage asks on
   * each call: no scan of the queue). Made when first asked: a campaign
   * queues 100,000 messages that nobody may look up one by one.
   */
  private pendingById: Map<string, QueueEntry> | undefined;
  private failedEntries: FailedEntry[] = [];
  /** Attempts of the head entry that failed transiently (in memory: a restart gives it fresh tries). */
  private fetchAttempts = new Map<string, number>();
  private lastDueAt = Number.NEGATIVE_INFINITY;
  private closed = false;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private sleepAbort: AbortController | undefined;
  /** The entry being released (clear() leaves it alone). */
  private releasing: QueueEntry | undefined;

  constructor(private readonly opts: SendQueueOptions) {
    super();
    this.log = new AppendLog<QueueRecord>(opts.file, opts.shown);
  }

  async load(): Promise<void> {
    const records = (await this.log.read()) ?? [];
    const pending = new Map<string, QueueEntry>();
    let lastDone: QueueRecord | undefined;
    for (const r of records) {
      if (r.op === 'enqueue') pending.set(r.entry.idMessage, r.entry);
      else if (r.op === 'drop') pending.delete(r.idMessage);
      else {
        pending.delete(r.op === 'done' ? r.idMessage : r.entry.idMessage);
        this.lastDueAt = Math.max(this.lastDueAt, r.dueAt);
        lastDone = r;
        if (r.op === 'failed') this.failedEntries.push({ ...r.entry, reason: r.reason, failedAt: r.at });
      }
    }
    this.failedEntries = this.failedEntries.slice(-FAILED_KEPT);
    this.pendingEntries = [...pending.values()];
    // Compaction keeps the file proportional to what is still pending, not to
    // everything ever sent. Done at load, before any append can race it.
    if (records.length > 1000 && records.length > 4 * (this.pendingEntries.length + this.failedEntries.length + 1)) {
      const keep: QueueRecord[] = this.failedEntries.map((f) => ({
        op: 'failed' as const,
        entry: stripFailure(f),
        dueAt: Math.min(this.lastDueAt, f.failedAt),
        reason: f.reason,
        at: f.failedAt,
      }));
      if (lastDone) keep.push(lastDone);
      for (const e of this.pendingEntries) keep.push({ op: 'enqueue', entry: e });
      await this.log.write(keep);
    }
  }

  /** Persists the entry; resolves once it is in the file (then it will be sent, exactly once). */
  async enqueue(entry: QueueEntry): Promise<void> {
    flatFields(entry);
    await this.log.append({ op: 'enqueue', entry });
    this.pendingEntries.push(entry);
    this.track(entry);
    this.wake?.();
  }

  pending(): readonly QueueEntry[] {
    return this.pendingEntries;
  }

  /** The pending entry that carries message `idMessage` (its own id, or one of its messageIds). */
  pendingWith(idMessage: string): QueueEntry | undefined {
    if (!this.pendingById) {
      this.pendingById = new Map();
      for (const e of this.pendingEntries) this.track(e);
    }
    return this.pendingById.get(idMessage);
  }

  private track(entry: QueueEntry): void {
    if (!this.pendingById) return;
    this.pendingById.set(entry.idMessage, entry);
    for (const id of entry.messageIds ?? []) this.pendingById.set(id, entry);
  }

  /** The head entry leaves the queue (sent, failed or expired). */
  private dropHead(): void {
    const entry = this.pendingEntries.shift();
    if (entry) this.untrack(entry);
  }

  private untrack(entry: QueueEntry): void {
    if (!this.pendingById) return;
    this.pendingById.delete(entry.idMessage);
    for (const id of entry.messageIds ?? []) this.pendingById.delete(id);
  }

  /**
   * Drops every message still waiting (clearMessagesQueue); a release in
   * progress finishes. Resolves once the drops are in the file.
   */
  async clear(): Promise<number> {
    const dropped = this.pendingEntries.filter((e) => e !== this.releasing);
    if (dropped.length === 0) return 0;
    await this.log.append(...dropped.map((e) => ({ op: 'drop' as const, idMessage: e.idMessage })));
    const gone = new Set(dropped);
    this.pendingEntries = this.pendingEntries.filter((e) => !gone.has(e));
    for (const e of dropped) this.untrack(e);
    return dropped.length;
  }

  /** Something that decides whether messages may leave changed (the instance's state): look again now. */
  poke(): void {
    this.sleepAbort?.abort();
    this.wake?.();
  }

  failed(): readonly FailedEntry[] {
    return this.failedEntries;
  }

  start(): void {
    if (!this.running) this.running = this.loop();
  }

  /** Stops releasing; an in-flight send finishes first. Pending entries stay in the file. */
  async close(): Promise<void> {
    this.closed = true;
    this.sleepAbort?.abort();
    this.wake?.();
    await this.running;
  }

  private dueOf(entry: QueueEntry): number {
    return Math.max(entry.enqueuedAt, this.lastDueAt + this.opts.intervalMs());
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      const head = this.pendingEntries[0];
      if (!head) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      const expiresAt = head.enqueuedAt + (this.opts.maxWaitMs ?? MAX_WAIT_MS);
      if (this.opts.clock.now() >= expiresAt) {
        const why = this.opts.heldBecause?.() ?? 'the instance was not authorized';
        await this.fail(head, this.lastDueAt, `not sent within 24 hours: ${why}`);
        this.dropHead();
        continue;
      }
      if (this.opts.canRelease && !this.opts.canRelease()) {
        // Not authorized: wait for a state change (poke) or the head's expiry.
        this.sleepAbort = new AbortController();
        await this.opts.clock.sleep(expiresAt - this.opts.clock.now(), this.sleepAbort.signal).catch(() => undefined);
        this.sleepAbort = undefined;
        continue;
      }
      const dueAt = this.dueOf(head);
      const wait = dueAt - this.opts.clock.now();
      if (wait > 0) {
        this.sleepAbort = new AbortController();
        await this.opts.clock.sleep(wait, this.sleepAbort.signal).catch(() => undefined);
        this.sleepAbort = undefined;
        continue;
      }
      this.releasing = head;
      try {
        await this.release(head, dueAt);
      } finally {
        this.releasing = undefined;
      }
    }
  }

  /** Records a lasting failure and tells the listeners. */
  private async fail(entry: QueueEntry, dueAt: number, reason: string): Promise<void> {
    const at = this.opts.clock.now();
    this.opts.logger.warn('local service: queued message could not be sent', { idMessage: entry.idMessage, reason });
    await this.log
      .append({ op: 'failed', entry, dueAt, reason, at })
      .catch((err: unknown) => this.opts.logger.error('local service: queue write failed', { reason: String(err) }));
    this.failedEntries.push({ ...entry, reason, failedAt: at });
    if (this.failedEntries.length > FAILED_KEPT) this.failedEntries.shift();
    this.emit('failed', { idMessage: entry.idMessage, chatId: entry.chatId, reason, ...idsOf(entry) });
  }

  private async release(entry: QueueEntry, dueAt: number): Promise<void> {
    const releasedAt = this.opts.clock.now();
    // Far behind schedule (a restart, a slow fetch): start a new schedule from
    // now instead of bursting to catch up. Small lateness keeps the old grid.
    const recordedDue = releasedAt - dueAt > this.opts.intervalMs() ? releasedAt : dueAt;
    this.emit('released', { idMessage: entry.idMessage, dueAt, releasedAt });
    try {
      if (!this.opts.isSent(entry.idMessage)) await this.opts.send(entry, releasedAt);
      await this.log.append({ op: 'done', idMessage: entry.idMessage, dueAt: recordedDue, releasedAt });
    } catch (e) {
      // Interrupted by close(): not a failure. The entry stays pending and is sent after the restart.
      if (this.closed) return;
      const failure = e instanceof Error ? e.message : String(e);
      const attempts = (this.fetchAttempts.get(entry.idMessage) ?? 0) + 1;
      if (attempts < MAX_SEND_ATTEMPTS && e instanceof FetchError && e.transient) {
        // A file host that is briefly down or too slow (or msgflow's own port,
        // right after a restart) is tried again later: the entry moves behind
        // the others, so one slow or hostile link never holds the queue for
        // more than one fetch deadline at a time.
        this.fetchAttempts.set(entry.idMessage, attempts);
        this.opts.logger.warn('local service: queued file could not be fetched; trying again after the messages queued behind it', {
          idMessage: entry.idMessage,
          attempt: attempts,
          reason: failure,
        });
        this.pendingEntries.shift();
        this.pendingEntries.push(entry);
        this.lastDueAt = recordedDue;
        return;
      }
      this.fetchAttempts.delete(entry.idMessage);
      this.dropHead();
      this.lastDueAt = recordedDue;
      await this.opts
        .keepFailed?.(entry, failure, this.opts.clock.now())
        .catch((err: unknown) => this.opts.logger.error('local service: a failed message could not be kept', { reason: String(err) }));
      await this.fail(entry, recordedDue, failure);
      return;
    }
    this.fetchAttempts.delete(entry.idMessage);
    this.dropHead();
    this.lastDueAt = recordedDue;
    // A typing notice leaves no message: nothing was sent.
    if (entry.kind !== 'typing') this.emit('sent', { idMessage: entry.idMessage, chatId: entry.chatId, ...idsOf(entry) });
  }
}

/**
 * Tries a queued file gets when its fetch fails transiently (FetchError.transient:
 * refused or dropped connection, temporary lookup failure, timeout, HTTP
 * 5xx/408/429). Each attempt is capped by local.fetchTimeoutMs, so one
 * entry's attempts take at most MAX_SEND_ATTEMPTS × fetchTimeoutMs in total
 * (90 s by default), and never more than one fetchTimeoutMs in a row: between
 * two attempts the messages queued behind it go first.
 */
export const MAX_SEND_ATTEMPTS = 3;

/** How long a message waits for the instance to be authorized, as on the real service. */
export const MAX_WAIT_MS = 24 * 3600_000;

/**
 * The entry's texts made flat (util/flat-string.ts): a chat id or a text
 * built by concatenation is a rope, and a queue of a campaign's messages
 * holds 100,000 of them for as long as they wait.
 */
function flatFields(entry: QueueEntry): void {
  const fields = entry as unknown as Record<string, unknown>;
  for (const k of Object.keys(fields)) {
    const v = fields[k];
    // The id and the kind are made whole (and a kind is one constant for all).
    if (typeof v === 'string' && k !== 'idMessage' && k !== 'kind') fields[k] = flatString(v);
  }
}

function idsOf(entry: QueueEntry): { messageIds?: string[] } {
  return entry.messageIds ? { messageIds: entry.messageIds } : {};
}

function stripFailure(f: FailedEntry): QueueEntry {
  const { reason: _r, failedAt: _f, ...entry } = f;
  return entry;
}
