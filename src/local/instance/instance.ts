/**
 * One local instance: its contacts, history, send queue, account checks,
 * notifications, settings and rate limits, all under dataDir/<idInstance>/.
 * `call` takes a request that has passed validation and answers with a
 * status and a JSON body (the per-method handlers are in dispatch.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { MsgflowError } from '../../api/errors.js';
import type { ApiMethod } from '../../api/methods.js';
import type { InstanceState, NotificationType, OutgoingStatus } from '../../api/notifications.js';
import type { CallRecord, Message, ParsedRequest } from '../../api/types.js';
import { chatKind } from '../../api/chat-id.js';
import { defaultPhone, type LocalInstanceConfig } from '../config.js';
import type { Logger } from '../../util/logger.js';
import type { Clock } from '../../util/clock.js';
import type { MediaStore } from '../media/types.js';
import type { Network } from '../network.js';
import { newMessageId } from '../ids.js';
import { typeByFileName } from '../media/detect-type.js';
import type { FetchedFile } from '../media/types.js';
import { buildStoredMessage, type ParsedMessageInput } from '../message-input.js';
import { RateLimiter } from '../../util/rate-limit.js';
import { BoundedMap } from '../../util/bounded-map.js';
import { openJsonDoc } from '../persist/json-doc.js';
import { Account, REBOOT_MS, type CallInput } from './account.js';
import { AccountChecker } from './account-check.js';
import { Chats, ChatStore } from './chats.js';
import { ContactBook } from './contacts.js';
import { Groups } from './groups.js';
import { History, type StoredMessage } from './history.js';
import { SendQueue, type QueueEntry } from './send-queue.js';
import { dispatch, type MethodHost, type MethodResult } from './dispatch.js';
import { Notifier } from './notifier.js';
import { resolveReplies } from './replies.js';
import { fileUrl, isSendingKind, outgoingBase, pause, Sending } from './sending.js';
import { Replier } from './replier.js';
import { SettingsStore } from './settings.js';
import { ScriptedFailures, webhookDownAt } from './failures.js';
import { StatusBook, type IncomingStatusInput } from './statuses.js';
import type { TrackedMessage } from '../notify/status-watcher.js';

export type { InstanceState };

/** States in which the account works: account methods answer. */
const WORKING: ReadonlySet<InstanceState> = new Set<InstanceState>(['authorized', 'yellowCard']);

/**
 * States in which messages leave the send queue. yellowCard works for the account methods but, as the
 * service documents, sending is suspended: messages wait in the queue (up to 24 h) like when not authorized.
 */
const SENDING: ReadonlySet<InstanceState> = new Set<InstanceState>(['authorized']);

export interface InstanceDeps {
  dataDir: string;
  network: Network;
  clock: Clock;
  media: MediaStore;
  logger: Logger;
  /** Base URL put in downloadUrl; read at send time (it is known only once the server listens). */
  publicUrl: () => string;
  /** The largest file sendFileByUpload and uploadFile accept, bytes. @default 104857600 (100 MiB, local.maxFileBytes) */
  maxFileBytes?: number;
  /** Webhook delivery timing. @default the service's figures (local.webhook) */
  webhook?: { timeoutMs: number; retryIntervalMs: number };
}

const MetaDoc = z.strictObject({ seededAt: z.number().nullable() });

/** The parts of an instance, each opened from its files before the instance exists. */
interface OpenedParts {
  contacts: ContactBook;
  history: History;
  checker: AccountChecker;
  notifier: Notifier;
  settings: SettingsStore;
  groups: Groups;
  /** Chats' and messages' changes (archive, edits...): chats.ts. */
  chatStore: ChatStore;
  account: Account;
}

/** What an instance keeps of its token to check requests against: its SHA-256 digest. */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** How many distinct given tokens a {@link TokenCheck} keeps the digest of. @default 64 */
export const TOKEN_CACHE_SIZE = 64;

/**
 * An instance's token check. Every request carries the token, nearly always
 * the same string, so the digest of a given string is computed once and kept
 * (a bounded map: a client spraying guesses evicts old entries instead of
 * growing it); the comparison itself stays `timingSafeEqual` over two
 * fixed-length digests on every request, so it takes the same time whether
 * the token is right or how much of it is.
 */
export class TokenCheck {
  private readonly expected: Buffer;
  private readonly digests: BoundedMap<string, Buffer>;

  constructor(token: string, maxEntries: number = TOKEN_CACHE_SIZE) {
    this.expected = tokenDigest(token);
    this.digests = new BoundedMap(maxEntries);
  }

  accepts(given: string): boolean {
    let digest = this.digests.get(given);
    if (digest === undefined) {
      digest = tokenDigest(given);
      this.digests.set(given, digest);
    }
    return timingSafeEqual(digest, this.expected);
  }
}

export class LocalInstance {
  readonly idInstance: string;
  readonly limiter: RateLimiter;
  /** The paced queue of sends (the service forwards its events; admin lists it). */
  readonly sendQueue: SendQueue;
  private stateNow: InstanceState;
  private readonly contacts: ContactBook;
  private readonly history: History;
  private readonly notifier: Notifier;
  private readonly replier: Replier;
  /** What the method handlers work with (dispatch.ts). */
  private readonly host: MethodHost;
  /** The token check: the expected digest made once, given tokens' digests cached (bounded). */
  private readonly token: TokenCheck;
  /** The fetch in progress, aborted by close(). Per fetch, so no listener outlives its fetch. */
  private inflight: AbortController | undefined;
  /** Aborted by close(): a typing pause in progress ends (its message stays queued). */
  private readonly stopping = new AbortController();
  /** Contacts that blocked the account (admin `block`): in memory only. */
  private readonly blockedBy = new Set<string>();
  private readonly failures: ScriptedFailures;
  /** The sending methods beyond sendMessage and sendFileByUrl. */
  private readonly sending: Sending;
  /** Posted and received statuses. */
  private readonly statuses: StatusBook;

  /**
   * Opens the instance's stores under dataDir/<idInstance>/, seeds an empty
   * instance once, recovers what a crash left (notifications, scripted
   * replies) and starts the send queue: the instance returned is whole.
   * @throws MsgflowError LOCAL_DATA_INVALID naming the file (instance id hidden) and line
   */
  static async open(config: LocalInstanceConfig, deps: InstanceDeps, seed?: () => Promise<ParsedMessageInput[]>): Promise<LocalInstance> {
    const dir = path.join(deps.dataDir, config.idInstance);
    // Files are named in errors with the instance id hidden.
    const shown = path.join(deps.dataDir, '<INSTANCE_ID>');
    const { network, clock } = deps;
    const meta = await openJsonDoc(path.join(dir, 'meta.json'), path.join(shown, 'meta.json'), MetaDoc, { seededAt: null });
    const contacts = await ContactBook.open(dir, shown, network, clock);
    const checker = await AccountChecker.open(dir, shown, config.checkAccountLimit, network, clock);
    const wid = widOf(config);
    const settings = await SettingsStore.open(path.join(dir, 'settings.json'), path.join(shown, 'settings.json'), {
      wid,
      base: config.settings,
      sendIntervalMs: config.sendIntervalMs,
    });
    // Groups: a message to a group the account left is notInGroup, in journals and notifications.
    const groups = await Groups.open(dir, shown, { network, clock, media: deps.media, publicUrl: deps.publicUrl, wid });
    // Read only once the notifier runs, after the history below exists.
    const notInGroup = (idMessage: string) => history.find(idMessage)?.fixedStatus === 'notInGroup';
    /*
     * A group the account never was in: not created here, nothing in its
     * history (an incoming message, a seed, one sent from the phone declares
     * a group made elsewhere). Only what the API sends is judged; the seed is
     * history as declared.
     */
    let seeding = false;
    const neverIn = (m: Message): boolean =>
      m.sendByApi === true && chatKind(m.chatId) === 'group' && !groups.knows(m.chatId) && !history.showsMembership(m.chatId);
    const notifier = createNotifier(config, deps, { dir, shown, wid, settings, notInGroup });
    await notifier.open();
    const chatStore = await ChatStore.open(dir, shown);
    const history = new History(
      dir,
      {
        statusOf: (chatId, sentAtMs) => network.statusOf(chatId, sentAtMs, clock.now()),
        statusWhenSent: (m) => (groups.notInGroup(m.chatId) || (!seeding && neverIn(m)) ? 'notInGroup' : undefined),
        phonebookName: (chatId) => contacts.phonebookName(chatId),
        amend: (m) => chatStore.amend(m),
        // Journal lag: a message sent through the API shows in the journals network.journalLagMs after it was sent.
        inJournal: (r) => !(r.message.sendByApi && sentThroughApi(r) && clock.now() < r.sentAtMs + network.journalLagMs),
      },
      shown,
    );
    await history.load();
    const account = await Account.open({ dir, shown, clock, media: deps.media, wid, publicUrl: deps.publicUrl }, config.state);
    if (seed && meta.data.seededAt === null && history.size === 0) {
      const inputs = await seed();
      seeding = true;
      await history.append(...inputs.map((i) => buildMessage(deps, i)));
      seeding = false;
      meta.data.seededAt = clock.now();
      await meta.write();
    }
    const inst = new LocalInstance(
      config,
      deps,
      { dir, shown },
      { contacts, history, checker, notifier, settings, groups, chatStore, account },
    );
    await inst.start();
    return inst;
  }

  private constructor(
    readonly config: LocalInstanceConfig,
    private readonly deps: InstanceDeps,
    where: { dir: string; shown: string },
    parts: OpenedParts,
  ) {
    this.idInstance = config.idInstance;
    this.stateNow = config.state;
    this.limiter = new RateLimiter(config.rateLimits, deps.clock);
    this.token = new TokenCheck(config.apiTokenInstance);
    this.contacts = parts.contacts;
    this.history = parts.history;
    this.notifier = parts.notifier;
    this.sendQueue = new SendQueue({
      file: path.join(where.dir, 'queue.jsonl'),
      shown: path.join(where.shown, 'queue.jsonl'),
      clock: deps.clock,
      intervalMs: () => parts.settings.current().delaySendMessagesMilliseconds,
      canRelease: () => SENDING.has(this.stateNow),
      heldBecause: () => (this.stateNow === 'yellowCard' ? 'sending was suspended (yellowCard)' : 'the instance was not authorized'),
      isSent: (id) => parts.history.has(id),
      send: (entry, releasedAt) => this.release(entry, releasedAt),
      keepFailed: (entry, _reason, failedAt) => this.keepFailedFile(entry, failedAt),
      logger: deps.logger,
    });
    this.sending = new Sending({
      history: parts.history,
      media: deps.media,
      clock: deps.clock,
      publicUrl: deps.publicUrl,
      wid: widOf(config),
      maxFileBytes: deps.maxFileBytes ?? 100 * 1024 * 1024,
      enqueue: (entry) => this.enqueueEntry(entry),
      stopping: this.stopping.signal,
    });
    this.replier = this.createReplier();
    this.failures = new ScriptedFailures(config.failures, {
      clock: deps.clock,
      stopping: this.stopping.signal,
      setState: (state) => this.setState(state),
      quotaExceeded: (data) => this.notifier.quotaExceeded(data),
      chatsMessaged: () => parts.history.chatsWithOutgoing(),
      onError: (e) => this.writeFailed(e),
    });
    this.statuses = new StatusBook({ ...where, ...deps, contacts: parts.contacts, wid: widOf(config), working: () => this.working });
    this.host = {
      ...parts,
      sending: this.sending,
      // Messages and chats
      chats: new Chats({
        store: parts.chatStore,
        history: parts.history,
        contacts: parts.contacts,
        network: deps.network,
        clock: deps.clock,
        notify: (c) => parts.notifier.messageChanged(c),
      }),
      // Account, queues and calls
      setState: (state) => this.setState(state),
      reboot: () => this.reboot(),
      // Statuses
      statuses: this.statuses,
      sendQueue: this.sendQueue,
      clock: deps.clock,
      network: deps.network,
      state: () => this.stateNow,
      working: () => this.working,
      enqueueText: (req) => this.enqueueText(req),
      enqueueFile: (req) => this.enqueueFile(req),
    };
  }

  /** Loads the send queue, redoes what a crash interrupted, and starts the queue and the notifier. */
  private async start(): Promise<void> {
    const queue = this.sendQueue;
    await this.statuses.load();
    if (this.working) await this.statuses.release();
    await queue.load();
    queue.on('sent', (e) => void this.afterSent(e.messageIds ?? [e.idMessage]));
    queue.on('failed', (e) => {
      for (const id of e.messageIds ?? [e.idMessage]) {
        void this.notifier.messageFailed(id, e.chatId, e.reason).catch((err: unknown) => this.writeFailed(err));
      }
    });
    const since = this.deps.clock.now() - 24 * 3600_000;
    await this.notifier.recover(
      this.history.apiOutgoingSince(since),
      queue.failed().filter((f) => f.failedAt >= since),
    );
    this.replier.recover();
    this.notifier.start();
    queue.start();
    this.failures.start();
  }

  /** The account's own chat id. */
  get wid(): string {
    return widOf(this.config);
  }

  get state(): InstanceState {
    return this.stateNow;
  }

  /** Whether the account works (messages leave the queue, account methods answer). */
  get working(): boolean {
    return WORKING.has(this.stateNow);
  }

  /** Whether `given` is this instance's token (compared in constant time). */
  acceptsToken(given: string): boolean {
    return this.token.accepts(given);
  }

  /** Changes the account's state (admin): stateInstanceChanged, and the queue looks again. */
  async setState(state: InstanceState): Promise<void> {
    if (state === this.stateNow) return;
    this.stateNow = state;
    this.sendQueue.poke();
    await this.host.account.recordState(state);
    if (this.working) await this.statuses.release();
    await this.notifier.stateChanged(state);
  }

  /** reboot: `starting` for REBOOT_MS, then back to the state before (a yellowCard account comes back authorized). */
  private async reboot(): Promise<{ isReboot: boolean }> {
    const back = this.stateNow === 'yellowCard' ? 'authorized' : this.stateNow;
    await this.setState('starting');
    void this.deps.clock
      .sleep(REBOOT_MS, this.stopping.signal)
      .then(() => (this.stateNow === 'starting' ? this.setState(back) : undefined))
      .catch(() => undefined);
    return { isReboot: true };
  }

  /**
   * Admin: a call made or received. It is kept for the call journals; an
   * incoming one raises incomingCall. Answers the call and whether its
   * notification was produced (its switch on).
   */
  async receiveCall(input: CallInput): Promise<{ call: CallRecord; notified: boolean }> {
    const call = await this.host.account.addCall(input);
    if (call.type === 'outgoing') return { call, notified: false };
    const notified = await this.notifier.callArrived({ from: call.from, status: call.status, idMessage: call.idMessage });
    return { call, notified };
  }

  /**
   * Admin: a contact blocks (`blocked: true`) or unblocks the account. A
   * block raises incomingBlock; the service documents no notification for
   * an unblock, so none is produced. Kept in memory, like the state: a
   * restart forgets it. Answers the contact's state and whether a
   * notification was queued (its switch on).
   */
  async receiveBlock(input: { chatId: string; blocked: boolean }): Promise<{ chatId: string; blocked: boolean; notified: boolean }> {
    const { chatId, blocked } = input;
    const was = this.blockedBy.has(chatId);
    if (blocked) this.blockedBy.add(chatId);
    else this.blockedBy.delete(chatId);
    // Blocking again while blocked is no new event.
    const notified = blocked && !was ? await this.notifier.blockedBy(chatId) : false;
    return { chatId, blocked, notified };
  }

  /** Admin: queues a notification as given, when its type's switch is on; false when it is off. */
  relayNotification(body: { typeWebhook: NotificationType } & Record<string, unknown>): Promise<boolean> {
    return this.notifier.relay(body);
  }

  async close(): Promise<void> {
    const closing = this.sendQueue.close();
    this.inflight?.abort();
    this.stopping.abort();
    await closing;
    await Promise.all([this.notifier.close(), this.replier.close()]);
  }

  private createReplier(): Replier {
    return new Replier({
      network: this.deps.network,
      clock: this.deps.clock,
      logger: this.deps.logger,
      has: (id) => this.history.has(id),
      firstOutgoing: (chatId) => {
        const r = this.history.firstOutgoing(chatId);
        return r && { idMessage: r.message.idMessage, chatId, sentAtMs: r.sentAtMs, typeMessage: r.message.typeMessage };
      },
      outgoingOfKind: (chatId, typeMessage) =>
        this.history.outgoingOfKind(chatId, typeMessage).map((r) => ({ idMessage: r.message.idMessage, chatId, sentAtMs: r.sentAtMs })),
      deliver: async (input) => {
        await this.inject(input);
      },
    });
  }

  /** Queued messages are in the history: notify, and let a scripted account answer. */
  private async afterSent(idMessages: readonly string[]): Promise<void> {
    for (const idMessage of idMessages) {
      const r = this.history.find(idMessage);
      if (!r) continue;
      try {
        await this.notifier.messageSent(r.message, r.sentAtMs);
      } catch (e) {
        this.writeFailed(e);
      }
      this.replier.messageSent({ idMessage, chatId: r.message.chatId, sentAtMs: r.sentAtMs, typeMessage: r.message.typeMessage });
      await this.failures.messageSent().catch((e: unknown) => this.writeFailed(e));
    }
  }

  private writeFailed(e: unknown): void {
    this.deps.logger.error('local service: a notification could not be written', { reason: String(e) });
  }

  call(method: ApiMethod, req: ParsedRequest<ApiMethod>, signal?: AbortSignal): Promise<MethodResult> {
    // A scripted chat quota refuses a send to one chat too many before it reaches the queue.
    const refused = this.failures.quotaAnswer(method, req);
    if (refused) return refused;
    return dispatch(this.host, method, req, signal);
  }

  /** Admin: a message arrives (or was sent from the phone). */
  async inject(given: ParsedMessageInput): Promise<Message> {
    const input = resolveReplies(given, this.history);
    const stored = buildStoredMessage(input, {
      now: this.deps.clock.now(),
      nameOf: (id) => this.deps.network.nameOf(id),
      find: (id) => this.history.find(id)?.message,
      ownWid: this.wid,
    });
    if (this.history.has(stored.message.idMessage)) {
      throw new MsgflowError('VALIDATION_FAILED', { details: `'idMessage' ${stored.message.idMessage} already exists` });
    }
    await this.history.append(stored);
    const m = this.history.rendered(stored);
    await this.notifier.messageArrived(m);
    return m;
  }

  /** Admin: a contact posts a status (received only from the account's contacts). */
  receiveStatus(input: IncomingStatusInput) {
    return this.statuses.receive(input);
  }

  /** Admin: contents of the contact list and the phonebook (the API has no method to read them). */
  contactsSnapshot() {
    return { contacts: this.contacts.contacts(), phonebook: this.contacts.phonebookEntries() };
  }

  /** sendMessage: into the same paced queue as files. */
  private async enqueueText(req: ParsedRequest<'sendMessage'>): Promise<{ idMessage: string }> {
    const entry: QueueEntry = {
      idMessage: newMessageId(),
      chatId: req.chatId,
      kind: 'text',
      message: req.message,
      enqueuedAt: this.deps.clock.now(),
    };
    if (req.quotedMessageId !== undefined) entry.quotedMessageId = req.quotedMessageId;
    if (req.linkPreview !== undefined) entry.linkPreview = req.linkPreview;
    if (req.typingTime !== undefined) entry.typingTime = req.typingTime;
    const preview = definedFields({ typePreview: req.typePreview, customPreview: req.customPreview });
    if (Object.keys(preview).length > 0) entry.payload = preview;
    await this.enqueueEntry(entry);
    return { idMessage: entry.idMessage };
  }

  /** Every send enters the queue here: once it resolves, the message will be sent (or fail), exactly once. */
  private enqueueEntry(entry: QueueEntry): Promise<void> {
    return this.sendQueue.enqueue(entry);
  }

  /** Called by the queue at release time: each kind into the history its way. */
  private release(entry: QueueEntry, releasedAt: number): Promise<void> {
    if (entry.kind === 'text') return this.sendText(entry, releasedAt);
    if (isSendingKind(entry)) return this.sending.release(entry, releasedAt);
    return this.sendFile(entry, releasedAt);
  }

  private async enqueueFile(req: ParsedRequest<'sendFileByUrl'>): Promise<{ idMessage: string }> {
    const entry: QueueEntry = {
      idMessage: newMessageId(),
      chatId: req.chatId,
      urlFile: req.urlFile,
      fileName: req.fileName,
      enqueuedAt: this.deps.clock.now(),
    };
    const named = typeByFileName(req.fileName);
    if (named) entry.typeMessage = named.typeMessage;
    if (req.caption !== undefined) entry.caption = req.caption;
    if (req.quotedMessageId !== undefined) entry.quotedMessageId = req.quotedMessageId;
    if (req.typingTime !== undefined) entry.typingTime = req.typingTime;
    if (req.typingType !== undefined) entry.typingType = req.typingType;
    await this.enqueueEntry(entry);
    return { idMessage: entry.idMessage };
  }

  /**
   * Called by the queue at release time: the typing notice, the file (fetched,
   * or an upload from the store), then the message into the history (durably).
   */
  private async sendFile(entry: QueueEntry, releasedAt: number): Promise<void> {
    await pause(this.deps.clock, entry.typingTime, this.stopping.signal);
    const f = entry.fileId === undefined ? await this.fetchFile(entry) : await this.deps.media.describe(entry.fileId);
    // An upload kept 15 days, queued up to 24 h: gone only if the store lost it.
    if (!f) throw new Error('the uploaded file is no longer stored');
    const sentAtMs = Math.max(releasedAt, this.deps.clock.now());
    const m: Message = {
      ...outgoingBase(entry, sentAtMs),
      // The type shown while it was queued; the fetch decides only what the name could not.
      typeMessage: entry.typeMessage ?? f.typeMessage,
      downloadUrl: fileUrl(this.deps.publicUrl(), f),
      caption: entry.caption ?? '',
      fileName: f.fileName,
      jpegThumbnail: f.jpegThumbnail ?? '',
      mimeType: f.mimeType,
      isAnimated: f.isAnimated,
    };
    if (f.typeMessage === 'videoMessage') m.videoNote = false;
    const quoted = this.sending.quoted(entry.quotedMessageId, entry.chatId);
    if (quoted) m.quotedMessage = quoted;
    await this.history.append({ message: m, sentAtMs });
  }

  /**
   * A sendFileByUrl whose file could not be fetched stays in the journals,
   * statusMessage failed, as the service keeps it (the reason is in the
   * outgoingMessageStatus notification; a journal has no field for it).
   */
  private async keepFailedFile(entry: QueueEntry, failedAt: number): Promise<void> {
    if (entry.kind !== undefined || entry.fileId !== undefined || entry.urlFile === undefined || this.history.has(entry.idMessage)) return;
    const m: Message = {
      ...outgoingBase(entry, failedAt),
      typeMessage: entry.typeMessage ?? 'documentMessage',
      downloadUrl: '',
      caption: entry.caption ?? '',
      fileName: entry.fileName ?? '',
      jpegThumbnail: '',
      mimeType: '',
    };
    await this.history.append({ message: m, sentAtMs: failedAt, fixedStatus: 'failed' });
  }

  private async fetchFile(entry: QueueEntry): Promise<FetchedFile> {
    const ac = new AbortController();
    this.inflight = ac;
    try {
      // A slow file host (network.fileHostDelayMs), on the service's clock.
      const delay = this.deps.network.fileHostDelayMs;
      if (delay > 0) await this.deps.clock.sleep(delay, AbortSignal.any([ac.signal, this.stopping.signal]));
      return await this.deps.media.fetchAndStore({ urlFile: entry.urlFile!, fileName: entry.fileName!, signal: ac.signal });
    } finally {
      this.inflight = undefined;
    }
  }

  /** Called by the queue at release time for a sendMessage: the typing notice, then the message into the history (durably). */
  private async sendText(entry: QueueEntry, releasedAt: number): Promise<void> {
    await pause(this.deps.clock, entry.typingTime, this.stopping.signal);
    const text = entry.message ?? '';
    const quoted = this.sending.quoted(entry.quotedMessageId, entry.chatId);
    const custom = entry.payload?.customPreview as CustomPreview | undefined;
    // A link shown with a preview (or a custom one) makes it an extended text, as on the real service.
    const preview = custom !== undefined || (entry.linkPreview !== false && /https?:\/\//i.test(text));
    const thumbnail = custom?.jpegThumbnail ?? (custom?.urlFile ? await this.previewThumbnail(custom.urlFile) : '');
    const sentAtMs = Math.max(releasedAt, this.deps.clock.now());
    const m: Message = {
      ...outgoingBase(entry, sentAtMs),
      // A text quoting a message is a quotedMessage, as the service shows it.
      typeMessage: quoted ? 'quotedMessage' : preview ? 'extendedTextMessage' : 'textMessage',
      textMessage: text,
    };
    if (preview && !quoted) {
      m.extendedTextMessageData = { text };
      m.extendedTextMessage = {
        text,
        title: custom?.title ?? '',
        description: custom?.description ?? '',
        previewType: ((entry.payload?.typePreview as string | undefined) ?? 'none').toUpperCase(),
        jpegThumbnail: thumbnail,
      };
    }
    if (quoted) m.quotedMessage = quoted;
    await this.history.append({ message: m, sentAtMs });
  }

  /**
   * customPreview.urlFile: the image of a large preview, fetched and made a
   * thumbnail. The real service leaves the preview out when it cannot make
   * it; so does this one (the message is sent, without the thumbnail).
   */
  private async previewThumbnail(urlFile: string): Promise<string> {
    try {
      const f = await this.fetchFile({ idMessage: '', chatId: '', urlFile, fileName: '', enqueuedAt: 0 });
      return f.jpegThumbnail ?? '';
    } catch (e) {
      this.deps.logger.warn('local service: customPreview.urlFile could not be fetched; sent without its image', { reason: String(e) });
      return '';
    }
  }
}

/** sendMessage's customPreview as queued. */
type CustomPreview = NonNullable<ParsedRequest<'sendMessage'>['customPreview']>;

function definedFields(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** When the status after `status` is due (Network.statusOf's timings), or undefined when none follows. */
function nextChangeAt(network: Network, m: TrackedMessage, status: OutgoingStatus): number | undefined {
  if (status === 'sent') return m.sentAtMs + network.deliveredAfterMs;
  if (status === 'delivered' && network.readAfterMs !== undefined) return m.sentAtMs + network.readAfterMs;
  return undefined;
}

/** The account's own chat id. */
function widOf(config: LocalInstanceConfig): string {
  return `${config.phone ?? defaultPhone(config.idInstance)}@c.us`;
}

function buildMessage(deps: InstanceDeps, input: ParsedMessageInput): StoredMessage {
  return buildStoredMessage(input, { now: deps.clock.now(), nameOf: (id) => deps.network.nameOf(id) });
}

function createNotifier(
  config: LocalInstanceConfig,
  deps: InstanceDeps,
  at: { dir: string; shown: string; wid: string; settings: SettingsStore; notInGroup: (idMessage: string) => boolean },
): Notifier {
  const { network, clock } = deps;
  return new Notifier({
    dir: at.dir,
    shown: at.shown,
    clock,
    logger: deps.logger,
    instanceData: { idInstance: Number(config.idInstance), wid: at.wid, typeInstance: 'whatsapp' },
    settings: at.settings,
    statusOf: (m) => (at.notInGroup(m.idMessage) ? 'notInGroup' : network.statusOf(m.chatId, m.sentAtMs, clock.now())),
    nextChangeAt: (m, status) => nextChangeAt(network, m, status),
    webhook: deps.webhook,
    receiverDown: (sinceStartMs) => webhookDownAt(config.failures, sinceStartMs),
  });
}

/** Whether a stored message's status follows the network (not fixed by a seed); notInGroup is fixed at send (Groups). */
function sentThroughApi(r: StoredMessage): boolean {
  return r.fixedStatus === undefined || r.fixedStatus === 'notInGroup';
}
