/**
 * Statuses ("stories") of one instance: the ones the account posts
 * (sendTextStatus, sendVoiceStatus, sendMediaStatus) to `participants` or
 * every contact, and the ones its contacts post (the admin endpoint). A
 * posted status is seen by the simulated participants on the network's
 * timings (delivered after deliveredAfterMs, read after readAfterMs), like a
 * message, but only while it is up: 24 hours on the instance's clock, or
 * until deleteStatus. A status posted while the instance does not work is
 * held (the service's status queue, up to 24 h) and goes out when it works
 * again. Like the history, no stored line changes: a viewer's
 * state is derived from the post time and the clock, so it is right after a
 * restart and under an injected clock.
 *
 * One append-only file, statuses.jsonl, a line per post, release, receipt or deletion: a
 * write costs the same however many statuses are stored.
 */
import path from 'node:path';
import { z } from 'zod';
import { MsgflowError } from '../../api/errors.js';
import { isPersonalChatId, phoneOfChatId } from '../../api/chat-id.js';
import { STATUS_FONTS, STATUS_TEXT_MAX } from '../../api/schemas.js';
import type { ParsedRequest, StatusPost, StatusStatisticItem } from '../../api/types.js';
import type { Clock } from '../../util/clock.js';
import { newMessageId } from '../ids.js';
import type { FetchedFile, MediaStore } from '../media/types.js';
import type { Network } from '../network.js';
import { AppendLog } from '../persist/append-log.js';
import type { ContactBook } from './contacts.js';
import { fileUrl } from './sending.js';

/** How long a status is up: WhatsApp removes it after a day. */
export const STATUS_LIFETIME_MS = 24 * 3600_000;
/** The service's default background: "#000000" (the text is white). */
const DEFAULT_BACKGROUND = '#000000';

/** A status the account posted, and who it was posted to. */
interface PostedRecord {
  kind: 'posted';
  post: StatusPost;
  sentAtMs: number;
  participants: string[];
  /**
   * When its viewers began to see it: the post time, or (posted while the
   * instance was not authorized: held, the service's status queue) the time
   * the instance worked again. Absent while held.
   */
  shownAtMs?: number;
}
/** A held status goes out: the instance works again. */
interface ShownRecord {
  kind: 'shown';
  idMessage: string;
  atMs: number;
}
/** A contact's status that reached the account. */
interface ReceivedRecord {
  kind: 'received';
  post: StatusPost;
  receivedAtMs: number;
}
/** deleteStatus. */
interface DeletedRecord {
  kind: 'deleted';
  idMessage: string;
  atMs: number;
}
type StatusRecord = PostedRecord | ReceivedRecord | DeletedRecord | ShownRecord;

/**
 * A contact's status, as the admin endpoint takes it: a text (`message`) or
 * a file (`urlFile` + `fileName`: an image, a video or an audio).
 */
export const IncomingStatusSchema = z
  .strictObject({
    /** The contact who posts it (a personal chat id). */
    chatId: z.string().refine(isPersonalChatId, { error: "'chatId' must be a personal chat ID (digits@c.us)" }),
    message: z.string().min(1).max(STATUS_TEXT_MAX).optional(),
    backgroundColor: z
      .string()
      .regex(/^#[0-9a-fA-F]{6}$/, { error: "'backgroundColor' must be a colour as #RRGGBB" })
      .optional(),
    font: z.enum(STATUS_FONTS).optional(),
    urlFile: z.url({ error: "'urlFile' must be a URL" }).optional(),
    fileName: z.string().min(1).optional(),
    caption: z.string().max(1024).optional(),
  })
  .refine((s) => (s.message === undefined) !== (s.urlFile === undefined), {
    error: "a status has either 'message' (text) or 'urlFile' (with 'fileName')",
  })
  .refine((s) => s.urlFile === undefined || s.fileName !== undefined, { error: "'fileName' is required with 'urlFile'" });
export type IncomingStatusInput = z.output<typeof IncomingStatusSchema>;

export interface StatusDeps {
  /** The instance's directory, and as named in errors (the instance id hidden). */
  dir: string;
  shown: string;
  clock: Clock;
  network: Network;
  contacts: ContactBook;
  media: MediaStore;
  /** Base URL put in downloadUrl, read at post time. */
  publicUrl: () => string;
  /** The account's own chat id: an outgoing status's chatId. */
  wid: string;
  /** Whether the account works: a status posted while it does not is held until it does (up to 24 h). */
  working: () => boolean;
}

export class StatusBook {
  private readonly log: AppendLog<StatusRecord>;
  /** In post order (oldest first); a deleted one stays here but leaves byId. */
  private readonly posted: PostedRecord[] = [];
  private readonly received: ReceivedRecord[] = [];
  private readonly byId = new Map<string, PostedRecord>();
  /** Statuses posted while the instance did not work, in post order. */
  private readonly held = new Map<string, PostedRecord>();

  constructor(private readonly deps: StatusDeps) {
    this.log = new AppendLog(path.join(deps.dir, 'statuses.jsonl'), path.join(deps.shown, 'statuses.jsonl'));
  }

  /** Reads statuses.jsonl (absent: no statuses yet). */
  async load(): Promise<void> {
    for (const r of (await this.log.read()) ?? []) this.index(r);
  }

  /**
   * The instance works (again): held statuses go out now; one held more
   * than 24 hours is dropped, as the service's queue drops it.
   */
  async release(): Promise<void> {
    const now = this.deps.clock.now();
    for (const r of [...this.held.values()]) {
      const expired = now - r.sentAtMs >= STATUS_LIFETIME_MS;
      await this.append(
        expired ? { kind: 'deleted', idMessage: r.post.idMessage, atMs: now } : { kind: 'shown', idMessage: r.post.idMessage, atMs: now },
      );
    }
  }

  async sendText(r: ParsedRequest<'sendTextStatus'>): Promise<{ idMessage: string }> {
    const participants = this.audience(r.participants);
    const now = this.deps.clock.now();
    const text = {
      text: r.message,
      backgroundColor: r.backgroundColor ?? DEFAULT_BACKGROUND,
      ...(r.font === undefined ? {} : { font: r.font }),
      participants,
    };
    const post = this.outgoing(now, 'extendedTextMessage', { textMessage: r.message, extendedTextMessage: text });
    return this.add({ kind: 'posted', post, sentAtMs: now, participants });
  }

  /**
   * A voice status: the file is fetched (and kept, for downloadUrl) before
   * the answer, as sendFileByUrl's is at release; it must be an audio.
   */
  async sendVoice(r: ParsedRequest<'sendVoiceStatus'>): Promise<{ idMessage: string }> {
    const f = await this.fetch(r.urlFile, r.fileName, ['audioMessage'], 'an audio file');
    const participants = this.audience(r.participants);
    const now = this.deps.clock.now();
    const post = this.outgoing(now, 'audioMessage', {
      ...this.fileFields(f, ''),
      backgroundColor: r.backgroundColor ?? DEFAULT_BACKGROUND,
    });
    return this.add({ kind: 'posted', post, sentAtMs: now, participants });
  }

  /** A picture or video status (the service takes no other kind). */
  async sendMedia(r: ParsedRequest<'sendMediaStatus'>): Promise<{ idMessage: string }> {
    const f = await this.fetch(r.urlFile, r.fileName, ['imageMessage', 'videoMessage'], 'a picture or a video');
    const participants = this.audience(r.participants);
    const now = this.deps.clock.now();
    const post = this.outgoing(now, f.typeMessage as StatusPost['typeMessage'], this.fileFields(f, r.caption ?? ''));
    return this.add({ kind: 'posted', post, sentAtMs: now, participants });
  }

  /**
   * Takes a status down: its viewers no longer see it, and the journals and
   * the statistic no longer know it.
   * @throws MsgflowError STATUS_NOT_FOUND when no status that is up has this id
   */
  async delete(idMessage: string): Promise<undefined> {
    this.live(idMessage);
    await this.append({ kind: 'deleted', idMessage, atMs: this.deps.clock.now() });
    return undefined;
  }

  /**
   * Each participant of a status the account posted, with how far it got:
   * sent (no account, or not yet), delivered, read. Nobody sees a status
   * after its 24 hours, so nobody reads it later either.
   * @throws MsgflowError STATUS_NOT_FOUND for an id the account did not post (or deleted)
   */
  statistic(idMessage: string): StatusStatisticItem[] {
    const r = this.byId.get(idMessage);
    if (!r) throw new MsgflowError('STATUS_NOT_FOUND');
    // Held in the queue: nobody has it yet.
    if (r.shownAtMs === undefined) return [];
    return r.participants.map((participant) => this.viewer(r, participant, r.shownAtMs!));
  }

  /** Statuses the account posted since `sinceMs`, newest first, each with how far it got to its viewers. */
  outgoingSince(sinceMs: number): StatusPost[] {
    const out: StatusPost[] = [];
    for (let i = this.posted.length - 1; i >= 0 && this.posted[i]!.sentAtMs >= sinceMs; i--) {
      const r = this.posted[i]!;
      if (!this.byId.has(r.post.idMessage)) continue;
      const shownAt = r.shownAtMs;
      out.push({
        ...r.post,
        statusMessage: shownAt === undefined ? 'pending' : furthest(r.participants.map((p) => this.viewer(r, p, shownAt).status)),
      });
    }
    return out;
  }

  /** Contacts' statuses received since `sinceMs`, newest first; names as the network and the phonebook give them now. */
  incomingSince(sinceMs: number): StatusPost[] {
    const out: StatusPost[] = [];
    for (let i = this.received.length - 1; i >= 0 && this.received[i]!.receivedAtMs >= sinceMs; i--) {
      const p = this.received[i]!.post;
      const sender = p.senderId ?? p.chatId;
      out.push({
        ...p,
        senderName: this.deps.network.nameOf(sender) ?? '',
        senderContactName: this.deps.contacts.phonebookName(sender),
      });
    }
    return out;
  }

  /**
   * A contact posts a status (admin). The account sees only its contacts'
   * statuses (the service: "statuses can only be received from numbers in the
   * contact list"): from anyone else it is not received.
   */
  async receive(input: IncomingStatusInput): Promise<{ received: boolean; status?: StatusPost }> {
    const phone = phoneOfChatId(input.chatId)!;
    if (!this.deps.contacts.knows(phone)) return { received: false };
    const now = this.deps.clock.now();
    const base = { type: 'incoming' as const, idMessage: newMessageId(), timestamp: Math.floor(now / 1000), chatId: input.chatId };
    let post: StatusPost;
    if (input.message !== undefined) {
      const text = { text: input.message, backgroundColor: input.backgroundColor ?? DEFAULT_BACKGROUND };
      if (input.font !== undefined) Object.assign(text, { font: input.font });
      post = { ...base, typeMessage: 'extendedTextMessage', textMessage: input.message, extendedTextMessage: text };
    } else {
      const f = await this.fetch(
        input.urlFile!,
        input.fileName!,
        ['imageMessage', 'videoMessage', 'audioMessage'],
        'a picture, a video or an audio',
      );
      post = { ...base, typeMessage: f.typeMessage as StatusPost['typeMessage'], ...this.fileFields(f, input.caption ?? '') };
    }
    post.senderId = input.chatId;
    await this.append({ kind: 'received', post, receivedAtMs: now });
    return { received: true, status: this.incomingSince(now)[0] };
  }

  /** A posted status that is still up, or STATUS_NOT_FOUND. */
  private live(idMessage: string): PostedRecord {
    const r = this.byId.get(idMessage);
    if (!r || this.deps.clock.now() - r.sentAtMs >= STATUS_LIFETIME_MS) throw new MsgflowError('STATUS_NOT_FOUND');
    return r;
  }

  /** How far a status got to one participant: as a message would, but frozen when the status came down. */
  private viewer(r: PostedRecord, participant: string, shownAt: number): StatusStatisticItem {
    const { network, clock } = this.deps;
    const at = Math.min(clock.now(), shownAt + STATUS_LIFETIME_MS);
    const seen = network.statusOf(participant, shownAt, at);
    // The statistic documents sent, delivered and read only: a number without an account stays sent.
    const status = seen === 'noAccount' ? 'sent' : seen;
    const reachedAt =
      status === 'read' ? shownAt + network.readAfterMs! : status === 'delivered' ? shownAt + network.deliveredAfterMs : shownAt;
    return { participant, timestamp: Math.floor(reachedAt / 1000), status };
  }

  /** `participants` as given, or (none given) every personal chat of the contact list. */
  private audience(given: readonly string[] | undefined): string[] {
    if (given !== undefined && given.length > 0) return [...new Set(given)];
    return this.deps.contacts
      .contacts()
      .map((c) => c.chatId)
      .filter(isPersonalChatId);
  }

  private outgoing(now: number, typeMessage: StatusPost['typeMessage'], fields: Partial<StatusPost>): StatusPost {
    return {
      type: 'outgoing',
      idMessage: newMessageId(),
      timestamp: Math.floor(now / 1000),
      typeMessage,
      chatId: this.deps.wid,
      ...fields,
      sendByApi: true,
    };
  }

  private fileFields(f: FetchedFile, caption: string): Partial<StatusPost> {
    return {
      downloadUrl: fileUrl(this.deps.publicUrl(), f),
      caption,
      fileName: f.fileName,
      jpegThumbnail: f.jpegThumbnail ?? '',
      mimeType: f.mimeType,
    };
  }

  /** Fetches urlFile into the media store; a failed fetch or a file of another kind is refused (400), naming the field. */
  private async fetch(urlFile: string, fileName: string, kinds: readonly string[], what: string): Promise<FetchedFile> {
    const f = await this.deps.media.fetchAndStore({ urlFile, fileName }).catch((e: unknown) => {
      // Fetched before the answer (not in the queue): a link that serves no file is the request's fault.
      if (!(e instanceof MsgflowError) || !e.code.startsWith('FILE_')) throw e;
      throw new MsgflowError('VALIDATION_FAILED', { details: `'urlFile' could not be fetched: ${e.message}` }, { cause: e });
    });
    if (!kinds.includes(f.typeMessage)) {
      throw new MsgflowError('VALIDATION_FAILED', { details: `'urlFile' must be ${what}, got ${f.mimeType}` });
    }
    return f;
  }

  private async add(r: PostedRecord): Promise<{ idMessage: string }> {
    r.post.participants = r.participants;
    if (this.deps.working()) r.shownAtMs = r.sentAtMs;
    await this.append(r);
    return { idMessage: r.post.idMessage };
  }

  /** Into the file first, then the index: a status is visible only once it is durable. */
  private async append(r: StatusRecord): Promise<void> {
    await this.log.append(r);
    this.index(r);
  }

  private index(r: StatusRecord): void {
    if (r.kind === 'posted') {
      this.posted.push(r);
      this.byId.set(r.post.idMessage, r);
      if (r.shownAtMs === undefined) this.held.set(r.post.idMessage, r);
    } else if (r.kind === 'received') {
      this.received.push(r);
    } else if (r.kind === 'shown') {
      const p = this.held.get(r.idMessage);
      if (p) p.shownAtMs = r.atMs;
      this.held.delete(r.idMessage);
    } else {
      this.byId.delete(r.idMessage);
      this.held.delete(r.idMessage);
    }
  }
}

/** A status's journal state: the furthest any viewer got (read once one has seen it). */
function furthest(states: readonly StatusStatisticItem['status'][]): StatusStatisticItem['status'] {
  if (states.includes('read')) return 'read';
  return states.includes('delivered') ? 'delivered' : 'sent';
}
