/**
 * The `local:` section of config.yaml: msgflow's built-in implementation of
 * the instance API and the simulated messenger network behind it.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { USERNAME_RE } from '../api/chat-id.js';
import { API_METHODS, type ApiMethod } from '../api/methods.js';
import { INSTANCE_STATES } from '../api/notifications.js';
import { REQUEST_SHAPES } from '../api/schemas.js';
import { MessageInputSchema } from './message-input.js';

const digits = z.string().regex(/^\d{1,20}$/, { error: 'expected digits' });

/** A scripted reply: a text, or a message of any kind (checked as the admin `incoming` endpoint checks it). */
const ReplySchema = z
  .strictObject({
    text: z.string().min(1, { error: 'expected the text of the reply' }).optional(),
    /** A message object (typeMessage and its fields), as the admin `incoming` endpoint takes it, without chatId and type. */
    message: z.record(z.string(), z.unknown()).optional(),
    /** @default 1000 */
    afterMs: z.number().int().min(0).default(1000),
  })
  .superRefine((r, ctx) => {
    if ((r.text === undefined) === (r.message === undefined)) {
      ctx.addIssue({ code: 'custom', message: "a reply takes either 'text' or 'message'" });
      return;
    }
    if (!r.message) return;
    if ('chatId' in r.message || 'type' in r.message) {
      ctx.addIssue({
        code: 'custom',
        path: ['message'],
        message: "the account's chat and 'incoming' are given: leave out chatId and type",
      });
      return;
    }
    const checked = MessageInputSchema.safeParse({ ...r.message, chatId: '10000000000@c.us' });
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      ctx.addIssue({ code: 'custom', path: ['message', ...issue.path.map(String)], message: issue.message });
    }
  });

export const AccountSchema = z.strictObject({
  /** Phone number in international digits. */
  phone: z.union([z.number().int().positive(), digits]).transform((v) => Number(v)),
  /** Public username, starting with `@`. */
  username: z.string().regex(USERNAME_RE, { error: 'expected @ followed by letters, digits, _ or .' }).optional(),
  /** Display name. */
  name: z.string().optional(),
  /** Privacy: checkAccount answers `exist:false` for this number. @default false */
  hidden: z.boolean().default(false),
  /**
   * Scripted answers: this account replies to the first message it receives
   * from an instance, each reply `afterMs` after that message was sent (on
   * the service's clock), as an incoming message with an
   * incomingMessageReceived notification: a `text`, or a `message` of any
   * kind (a message object as the admin `incoming` endpoint takes it, without
   * chatId and type). @default []
   */
  replies: z.array(ReplySchema).default([]),
  /**
   * How this account votes on each poll an instance sends it (sendPoll):
   * after `afterMs`, the options it chooses now (an empty list takes its vote
   * back), as pollUpdateMessage notifications. @default []
   */
  votes: z
    .array(
      z.strictObject({
        options: z.array(z.string()),
        /** @default 1000 */
        afterMs: z.number().int().min(0).default(1000),
      }),
    )
    .default([]),
  /**
   * The button this account presses on each message with reply buttons an
   * instance sends it (sendInteractiveButtonsReply): a buttonsResponseMessage
   * `afterMs` after it was sent. @default []
   */
  presses: z
    .array(
      z.strictObject({
        buttonId: z.string().min(1, { error: 'expected the buttonId of a button of the message' }),
        /** @default 1000 */
        afterMs: z.number().int().min(0).default(1000),
      }),
    )
    .default([]),
  /**
   * Messages this account writes first, on its own (a contact who starts a
   * conversation, as the demo's does): each `afterMs` after the service
   * starts, a `text` or a `message` of any kind, as an incoming message with
   * its notification. Once: a message the history already holds is not
   * written again after a restart. @default []
   */
  writes: z.array(ReplySchema).default([]),
});

export const PopulationSchema = z.strictObject({
  /** Leading digits of the numbers this entry covers, e.g. "7920". */
  prefix: z
    .union([z.string().regex(/^\d{1,15}$/, { error: 'expected 1 to 15 digits' }), z.number().int().nonnegative()])
    .transform((v) => String(v)),
  /** Share of those numbers that have an account, 0 to 1. */
  share: z.number().min(0, { error: 'expected a share from 0 to 1' }).max(1, { error: 'expected a share from 0 to 1' }),
});

const rateLimitsShape = Object.fromEntries(
  API_METHODS.map((m) => [m, z.number().int().min(0, { error: 'expected requests/second, 0 for unlimited' }).optional()]),
) as Record<ApiMethod, z.ZodOptional<z.ZodNumber>>;

export const RateLimitsSchema = z.strictObject(rateLimitsShape);

/** One scripted state change: at a time after the service started, or after this instance sent N messages. */
const ScriptedStateSchema = z
  .strictObject({
    state: z.enum(INSTANCE_STATES),
    /** Milliseconds after the service started (its clock). */
    afterMs: z.number().int().min(0).optional(),
    /** After this many messages left the send queue since the service started. */
    afterSends: z.number().int().min(1).optional(),
  })
  .refine((s) => (s.afterMs === undefined) !== (s.afterSends === undefined), {
    error: "a scripted state takes either 'afterMs' or 'afterSends'",
  });

/**
 * Failures scripted on one instance, for testing what a bot does when the account is in danger. Times
 * count from the service's start (a restart starts them again). @default none
 */
export const FailuresSchema = z.strictObject({
  /** The instance turning yellowCard, blocked, notAuthorized... (and back) at a time or after N sends. @default [] */
  states: z.array(ScriptedStateSchema).default([]),
  /**
   * The Developer plan's chat quota: messages may go to this many chats; a send to one more answers HTTP
   * 466 with the documented body and a quotaExceeded notification is queued. Chats already messaged count.
   */
  newChatsQuota: z.number().int().min(0).optional(),
  /** The webhook receiver down for a while: pushes fail as if nothing answered, from `afterMs` for `forMs`. @default [] */
  webhookDown: z.array(z.strictObject({ afterMs: z.number().int().min(0), forMs: z.number().int().min(1) })).default([]),
});

export const LocalInstanceSchema = z.strictObject({
  idInstance: z.union([digits, z.number().int().positive()]).transform((v) => String(v)),
  apiTokenInstance: z.string().min(8, { error: 'expected a token of at least 8 characters' }),
  /**
   * The account's state at start (a restart brings it back). Only
   * `authorized` sends; in the others messages stay queued (up to 24 h),
   * and the methods that need the account answer 400 (not in `yellowCard`,
   * where only sending is suspended).
   * @default authorized
   */
  state: z.enum(INSTANCE_STATES).default('authorized'),
  /** The account's own phone number (its `wid` is `<phone>@c.us`). @default a number derived from the idInstance, never the id itself (see defaultPhone) */
  phone: digits.optional(),
  /**
   * Initial settings, as setSettings takes them (e.g. `incomingWebhook: yes`,
   * `webhookUrl`). setSettings overrides them; the rest default to the real
   * service's: webhookUrl empty, every switch `no`. @default {}
   */
  settings: z.strictObject(REQUEST_SHAPES.setSettings).default({}),
  /** Send queue interval in ms. @default 3000 */
  sendIntervalMs: z.number().int().min(500, { error: 'expected at least 500 ms' }).default(3000),
  /** Requests/second per method; 0 = unlimited. @default the published limits */
  rateLimits: RateLimitsSchema.default({}),
  /** Distinct numbers checkAccount may check per window before rate_limit_exceeded. */
  checkAccountLimit: z
    .strictObject({
      numbers: z.number().int().positive().default(100),
      windowMinutes: z.number().positive().default(10),
      retryAfterSeconds: z.number().int().positive().default(7200),
    })
    .default({ numbers: 100, windowMinutes: 10, retryAfterSeconds: 7200 }),
  /** Seed file (YAML or JSON) with chats and messages; relative to the config file. */
  seed: z.string().optional(),
  /** Scripted failures (docs/local-service.md, Scriptable failures). @default none */
  failures: FailuresSchema.default({ states: [], webhookDown: [] }),
});

/**
 * The own number of a local instance without `phone`: `7999` and 7 digits of
 * a hash of its id, the same at every start. Not the id itself: the number
 * goes where anyone reads it (`instanceData.wid` of every notification, and so
 * the run records of the flows it starts; getSettings), the id must not.
 *
 * @example defaultPhone('1101000001') // '7999' followed by 7 digits
 */
export function defaultPhone(idInstance: string): string {
  const n = createHash('sha256').update(`msgflow local phone ${idInstance}`).digest().readUInt32BE(0) % 10_000_000;
  return `7999${String(n).padStart(7, '0')}`;
}

export const NetworkSchema = z.strictObject({
  /** Name of the messenger in texts such as `<chat_id> is not on <messenger>`. @default WhatsApp */
  name: z.string().default('WhatsApp'),
  accounts: z.array(AccountSchema).default([]),
  /**
   * Simulated population: every number starting with `prefix` has an account
   * with probability `share`, decided from the number itself (the same answer
   * in every run and process). Explicit `accounts` win; when several prefixes
   * match, the longest decides. @default []
   */
  population: z.array(PopulationSchema).default([]),
  /** A sent message becomes delivered after this many ms. @default 1000 */
  deliveredAfterMs: z.number().int().min(0).default(1000),
  /** ...and read after this many ms; omitted: never read. */
  readAfterMs: z.number().int().min(0).optional(),
  /**
   * Journal lag: a message sent through the API appears in getChatHistory, getMessage and
   * lastOutgoingMessages only this long after it was sent (the service documents up to 2 minutes). @default 0
   */
  journalLagMs: z.number().int().min(0).default(0),
  /** A slow file host: fetching a urlFile starts this long after the message leaves the queue (service clock). @default 0 */
  fileHostDelayMs: z.number().int().min(0).default(0),
});

export const LocalSchema = z.strictObject({
  /** HTTP port of `msgflow serve` and of `msgflow start`'s listener. @default 7070 */
  port: z.number().int().min(0).max(65535).default(7070),
  /** Host to bind. @default 127.0.0.1 */
  host: z.string().default('127.0.0.1'),
  /** lowdb files and fetched files live here (relative to the config file). @default .msgflow/local */
  dataDir: z.string().default('.msgflow/local'),
  network: NetworkSchema.default({
    name: 'WhatsApp',
    accounts: [],
    population: [],
    deliveredAfterMs: 1000,
    journalLagMs: 0,
    fileHostDelayMs: 0,
  }),
  instances: z.array(LocalInstanceSchema).default([]),
  /** Largest file sendFileByUrl fetches, bytes. @default 104857600 (100 MiB) */
  maxFileBytes: z
    .number()
    .int()
    .positive()
    .default(100 * 1024 * 1024),
  /** Timeout for fetching urlFile, ms. @default 30000 */
  fetchTimeoutMs: z.number().int().positive().default(30_000),
  /** How urlFile links are fetched. */
  fetch: z
    .strictObject({
      /**
       * Fetch urlFile from loopback, private (10/8, 172.16/12, 192.168/16,
       * 100.64/10, fc00::/7) and link-local addresses, checked after DNS
       * resolution and on every redirect. msgflow's own publicUrl and port
       * are always allowed. @default false
       */
      allowPrivate: z.boolean().default(false),
    })
    .default({ allowPrivate: false }),
  /** Redirects followed when fetching urlFile. @default 5 */
  maxRedirects: z.number().int().min(0).max(20).default(5),
  /** How long fetched files are kept, ms. @default 86400000 (24 h) */
  fileRetentionMs: z
    .number()
    .int()
    .positive()
    .default(24 * 3600 * 1000),
  /** Largest accepted request body, bytes. @default 1048576 */
  maxBodyBytes: z
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  /**
   * Webhook delivery: how long a push waits for the receiver's answer, and the time between two tries
   * of a push that failed. @default the service's documented figures: 180000 and 60000 ms
   */
  webhook: z
    .strictObject({
      timeoutMs: z.number().int().positive().default(180_000),
      retryIntervalMs: z.number().int().positive().default(60_000),
    })
    .default({ timeoutMs: 180_000, retryIntervalMs: 60_000 }),
  /** A folder served read-only under `/_local/static/` (demo and test files for sendFileByUrl). */
  staticDir: z.string().optional(),
  /** Base URL put in downloadUrl; default: the address the server listens on. */
  publicUrl: z.string().url().optional(),
});

export type LocalConfig = z.output<typeof LocalSchema>;
export type LocalInstanceConfig = z.output<typeof LocalInstanceSchema>;
export type NetworkConfig = z.output<typeof NetworkSchema>;
export type AccountConfig = z.output<typeof AccountSchema>;
export type PopulationConfig = z.output<typeof PopulationSchema>;
export type FailuresConfig = z.output<typeof FailuresSchema>;
