/**
 * One local instance: its contacts, history, send queue, account checks and
 * rate limits, all under dataDir/<idInstance>/. `call` takes a request that
 * has passed validation and answers with a status and a JSON body.
 */
import path from 'node:path';
import type { Low } from 'lowdb';
import { z } from 'zod';
import { MsgflowError } from '../../api/errors.js';
import { chatKind } from '../../api/chat-id.js';
import type { ApiMethod } from '../../api/methods.js';
import type { Message, ParsedRequest } from '../../api/types.js';
import type { LocalInstanceConfig } from '../config.js';
import type { Logger } from '../../util/logger.js';
import type { Clock } from '../../util/clock.js';
import type { MediaStore } from '../media/index.js';
import type { Network } from '../network.js';
import { newMessageId } from '../ids.js';
import { buildStoredMessage, type ParsedMessageInput } from '../message-input.js';
import { RateLimiter } from '../../util/rate-limit.js';
import { openJsonDoc } from '../persist/json-doc.js';
import { AccountChecker } from './account-check.js';
import { ContactBook } from './contacts.js';
import { History, type StoredMessage } from './history.js';
import { SendQueue, type QueueEntry } from './send-queue.js';

export type InstanceState = LocalInstanceConfig['state'];

export interface InstanceDeps {
  dataDir: string;
  network: Network;
  clock: Clock;
  media: MediaStore;
  logger: Logger;
  /** Base URL put in downloadUrl; read at send time (it is known only once the server listens). */
  publicUrl: () => string;
}

export interface MethodResult {
  status: number;
  body: unknown;
}

const MetaDoc = z.strictObject({ seededAt: z.number().nullable() });
type MetaDoc = z.output<typeof MetaDoc>;

export class LocalInstance {
  readonly idInstance: string;
  readonly limiter: RateLimiter;
  state: InstanceState;
  private contacts!: ContactBook;
  private history!: History;
  private queue!: SendQueue;
  private checker!: AccountChecker;
  private meta!: Low<MetaDoc>;
  private readonly dir: string;
  /** The fetch in progress, aborted by close(). Per fetch, so no listener outlives its fetch. */
  private inflight: AbortController | undefined;

  constructor(readonly config: LocalInstanceConfig, private readonly deps: InstanceDeps) {
    this.idInstance = config.idInstance;
    this.state = config.state;
    this.limiter = new RateLimiter(config.rateLimits, deps.clock);
    this.dir = path.join(deps.dataDir, config.idInstance);
  }

  get sendQueue(): SendQueue {
    return this.queue;
  }

  /** Opens the stores, seeds an empty instance once, and starts the send queue. */
  async open(seed?: () => Promise<ParsedMessageInput[]>): Promise<void> {
    const { network, clock } = this.deps;
    // Files are named in errors with the instance id hidden.
    const shown = path.join(this.deps.dataDir, '<INSTANCE_ID>');
    this.meta = await openJsonDoc(path.join(this.dir, 'meta.json'), path.join(shown, 'meta.json'), MetaDoc, { seededAt: null });
    this.contacts = await ContactBook.open(this.dir, shown, network, clock);
    this.checker = await AccountChecker.open(this.dir, shown, this.config.checkAccountLimit, network, clock);
    this.history = new History(this.dir, {
      statusOf: (chatId, sentAtMs) => network.statusOf(chatId, sentAtMs, clock.now()),
      phonebookName: (chatId) => this.contacts.phonebookName(chatId),
    }, shown);
    await this.history.load();
    if (seed && this.meta.data.seededAt === null && this.history.size === 0) {
      const inputs = await seed();
      await this.history.append(...inputs.map((i) => this.build(i)));
      this.meta.data.seededAt = clock.now();
      await this.meta.write();
    }
    this.queue = new SendQueue({
      file: path.join(this.dir, 'queue.jsonl'),
      shown: path.join(shown, 'queue.jsonl'),
      clock,
      intervalMs: this.config.sendIntervalMs,
      isSent: (id) => this.history.has(id),
      send: (entry, releasedAt) => this.sendFile(entry, releasedAt),
      logger: this.deps.logger,
    });
    await this.queue.load();
    this.queue.start();
  }

  async close(): Promise<void> {
    const closing = this.queue?.close();
    this.inflight?.abort();
    await closing;
  }

  async call(method: ApiMethod, req: ParsedRequest<ApiMethod>): Promise<MethodResult> {
    switch (method) {
      case 'addContact':
        return ok(await this.contacts.add(req as ParsedRequest<'addContact'>));
      case 'editContact':
        return ok(await this.contacts.edit(req as ParsedRequest<'editContact'>));
      case 'deleteContact':
        return ok(await this.contacts.delete(req as ParsedRequest<'deleteContact'>));
      case 'getChatHistory': {
        const r = req as ParsedRequest<'getChatHistory'>;
        return ok(this.history.chatHistory(r.chatId, r.count));
      }
      case 'getMessage': {
        const r = req as ParsedRequest<'getMessage'>;
        return ok(this.history.getMessage(r.chatId, r.idMessage));
      }
      case 'lastOutgoingMessages': {
        const r = req as ParsedRequest<'lastOutgoingMessages'>;
        return ok(this.history.lastOutgoing(this.deps.clock.now() - r.minutes * 60_000));
      }
      case 'sendFileByUrl':
        return ok(await this.enqueueFile(req as ParsedRequest<'sendFileByUrl'>));
      case 'checkAccount': {
        if (this.state !== 'authorized') {
          const e = new MsgflowError('INSTANCE_NOT_READY', { state: this.state });
          return { status: e.status ?? 200, body: { status: false, reason: e.message } };
        }
        return ok(await this.checker.check(req as ParsedRequest<'checkAccount'>));
      }
    }
  }

  /** Admin: a message arrives (or was sent from the phone). */
  async inject(input: ParsedMessageInput): Promise<Message> {
    const stored = this.build(input);
    if (this.history.has(stored.message.idMessage)) {
      throw new MsgflowError('VALIDATION_FAILED', { details: `'idMessage' ${stored.message.idMessage} already exists` });
    }
    await this.history.append(stored);
    return this.history.getMessage(stored.message.chatId, stored.message.idMessage);
  }

  /** Admin: contents of the contact list and the phonebook (the API has no method to read them). */
  contactsSnapshot() {
    return { contacts: this.contacts.contacts(), phonebook: this.contacts.phonebookEntries() };
  }

  private build(input: ParsedMessageInput): StoredMessage {
    return buildStoredMessage(input, { now: this.deps.clock.now(), nameOf: (id) => this.deps.network.nameOf(id) });
  }

  private async enqueueFile(req: ParsedRequest<'sendFileByUrl'>): Promise<{ idMessage: string }> {
    const entry: QueueEntry = {
      idMessage: newMessageId(),
      chatId: req.chatId,
      urlFile: req.urlFile,
      fileName: req.fileName,
      enqueuedAt: this.deps.clock.now(),
    };
    if (req.caption !== undefined) entry.caption = req.caption;
    if (req.quotedMessageId !== undefined) entry.quotedMessageId = req.quotedMessageId;
    if (req.typingTime !== undefined) entry.typingTime = req.typingTime;
    if (req.typingType !== undefined) entry.typingType = req.typingType;
    await this.queue.enqueue(entry);
    return { idMessage: entry.idMessage };
  }

  /** Called by the queue at release time: fetch, then record in history (durably). */
  private async sendFile(entry: QueueEntry, releasedAt: number): Promise<void> {
    const ac = new AbortController();
    this.inflight = ac;
    let f;
    try {
      f = await this.deps.media.fetchAndStore({ urlFile: entry.urlFile, fileName: entry.fileName, signal: ac.signal });
    } finally {
      this.inflight = undefined;
    }
    const sentAtMs = Math.max(releasedAt, this.deps.clock.now());
    const m: Message = {
      type: 'outgoing',
      idMessage: entry.idMessage,
      timestamp: Math.floor(sentAtMs / 1000),
      typeMessage: f.typeMessage,
      chatId: entry.chatId,
      chatType: chatKind(entry.chatId) === 'group' ? 'group' : 'user',
      sendByApi: true,
      isForwarded: false,
      forwardingScore: 0,
      deletedMessageId: '',
      editedMessageId: '',
      isEdited: false,
      isDeleted: false,
      downloadUrl: `${this.deps.publicUrl()}/files/${f.id}/${encodeURIComponent(f.fileName)}`,
      caption: entry.caption ?? '',
      fileName: f.fileName,
      jpegThumbnail: f.jpegThumbnail ?? '',
      mimeType: f.mimeType,
      isAnimated: f.isAnimated,
    };
    if (f.typeMessage === 'videoMessage') m.videoNote = false;
    if (entry.quotedMessageId) {
      const q = this.history.find(entry.quotedMessageId);
      m.quotedMessage = { stanzaId: entry.quotedMessageId, participant: q?.message.senderId ?? '' };
    }
    await this.history.append({ message: m, sentAtMs });
  }
}

function ok(body: unknown): MethodResult {
  return { status: 200, body };
}
