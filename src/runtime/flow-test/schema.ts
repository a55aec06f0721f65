/**
 * The format of flow test files (`flows/*.test.yaml`): cases that run one flow
 * against the in-process local service on a virtual clock and state what must
 * come out. schema/flow-test.schema.json is generated from this.
 */
import { INSTANCE_STATES } from '../../api/notifications.js';
import { z } from 'zod';
import { validateTimezone } from '../../engine/schedule/validate.js';
import { AccountSchema, FailuresSchema, RateLimitsSchema } from '../../local/config.js';
import { MessageInputSchema } from '../../local/message-input.js';
import { DURATION_PATTERN } from '../../util/duration.js';
import { NOTIFICATION_TYPES } from '../../api/notifications.js';

/** The scheduler's rule for a zone name (the one check of it). */
const validZone = (tz: string) => validateTimezone(tz) === undefined;

const Duration = z.string().regex(new RegExp(DURATION_PATTERN), { error: 'expected a duration such as 500ms, 30s, 2h or 1d' });

/** Generated rows: `count` phone numbers counting up from `from`, in column `column`. */
const Sequence = z.strictObject({
  sequence: z.strictObject({
    /** @default phone */
    column: z.string().default('phone'),
    from: z.union([z.number().int().positive(), z.string().regex(/^\d{1,20}$/)]).transform((v) => BigInt(v)),
    count: z.number().int().min(1).max(100_000),
  }),
});

const InputValue = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  Sequence,
  /** Rows given inline, as a data file would hold them. */
  z.array(z.record(z.string(), z.unknown())),
]);

const Fault = z.strictObject({
  /** API method the fault applies to, e.g. checkAccount. */
  method: z.string().min(1),
  /** Which calls of that method fail (1-based): one number or a list. */
  call: z.union([z.number().int().positive(), z.array(z.number().int().positive()).min(1)]),
  /**
   * What they answer: an HTTP status (401, 429, 500, 502...) or
   * `rate_limit_exceeded` (checkAccount's own answer, with retryAfter seconds).
   */
  answer: z.union([z.number().int().min(400).max(599), z.literal('rate_limit_exceeded')]),
  /** Retry-After / retryAfter seconds sent with the fault. @default 7200 for rate_limit_exceeded, none otherwise */
  retryAfter: z.number().int().min(0).optional(),
});

const Reply = z.strictObject({
  /** Virtual time after the run's start at which the message arrives. */
  after: Duration,
  /** Sender's phone number (digits). */
  from: z.union([z.number().int().positive(), z.string().regex(/^\d{1,20}$/)]).transform((v) => String(v)),
  text: z.string(),
});

/** What a `bot:` step expects of the bot's next message in the chat (each key optional; values may use $match, $count...). */
const BotExpect = z.strictObject({
  /** The text (a text message's, a buttons message's body, a file's caption). */
  text: z.unknown().optional(),
  /** The labels of its reply buttons, in order. */
  buttons: z.unknown().optional(),
  /** The name of the file it sends. */
  file: z.unknown().optional(),
  /** Its kind (typeMessage), e.g. documentMessage. */
  typeMessage: z.unknown().optional(),
});

/**
 * One step of a dialog script (a case with `script:` instead of `event:`):
 * the contact writes, presses a button or sends any message; the bot must
 * have answered so; virtual time passes; the operator writes from the phone;
 * the session (and handover) must be so. Each message reaches the flow as
 * live (the local service's notification, msgflow start's consumer), and
 * the step after it waits until every run it started has ended and the
 * service has sent what they queued.
 */
const ScriptStep = z.union([
  z.strictObject({
    /** The contact writes this text, or sends this message (a seed-file message without chatId, e.g. { typeMessage: locationMessage, location: {...} }). */
    user: z.union([z.string(), z.record(z.string(), z.unknown())]),
  }),
  /** The contact presses this button (its id) of the bot's last buttons message. */
  z.strictObject({ press: z.string().min(1) }),
  /** The bot's next message in the chat must match; `nothing`: the bot sent nothing more. */
  z.strictObject({ bot: z.union([z.literal('nothing'), BotExpect]) }),
  /** Virtual time passes (idle timeouts, handovers end). */
  z.strictObject({ wait: Duration }),
  /** The account's operator writes this text to the chat from the phone (outgoingMessageReceived). */
  z.strictObject({ operator: z.string() }),
  z.strictObject({
    expect: z.strictObject({
      /** Subset of the chat's session with the case's flow (state, status, vars, history, recent...); null: none. */
      session: z.unknown().optional(),
      /** Whether the chat is handed to a human now. */
      handover: z.boolean().optional(),
      /** Whether the chat is on the instance's opt-out list (the stop command). */
      optedOut: z.boolean().optional(),
    }),
  }),
]);

const FileUrl = z.union([
  /** Path of the file served at that URL (relative to the test file). */
  z.string(),
  /** The URL answers this HTTP status instead. */
  z.strictObject({ status: z.number().int().min(400).max(599) }),
]);

const RunExpect = z.strictObject({
  /** The flow whose runs are looked at. */
  flow: z.string().min(1),
  /** How many of its runs must match: exactly this many. @default at least one */
  count: z.number().int().min(0).optional(),
  status: z.unknown().optional(),
  trigger: z.unknown().optional(),
  /** What started the run: the notification, or the alert (kind, instance, reason...). */
  event: z.unknown().optional(),
  /** Per step id: subset of its record. */
  steps: z.unknown().optional(),
  error: z.unknown().optional(),
});

const ReportExpect = z.strictObject({
  /** Report path as the flow writes it (relative to the project). */
  file: z.string().min(1),
  /** Expected rows (each must match some row; see matching) or `{ $count: N }`. */
  rows: z.unknown().optional(),
  /** Subset of the whole report (JSON reports). */
  content: z.unknown().optional(),
});

const Expect = z.strictObject({
  /** Final run status. @default succeeded */
  status: z.enum(['succeeded', 'failed', 'interrupted', 'cancelled']).default('succeeded'),
  /** Subset of the run record (itemsDone, itemsFailed, error...). */
  run: z.record(z.string(), z.unknown()).optional(),
  /** Per step id: subset of its record (status, output, done, failed...). */
  steps: z.record(z.string(), z.unknown()).optional(),
  /** Events that must have been emitted (each matches some event: `{ type: run:waiting, ... }`). */
  events: z.array(z.record(z.string(), z.unknown())).optional(),
  /** Virtual time the run took: `{ $gte: 2h }` style bounds as durations. */
  elapsed: z.strictObject({ atLeast: Duration.optional(), atMost: Duration.optional() }).optional(),
  /** The local service afterwards (first local instance): contacts, outgoing messages, send queue. */
  local: z
    .strictObject({
      contacts: z.unknown().optional(),
      phonebook: z.unknown().optional(),
      outgoing: z.unknown().optional(),
      queue: z.unknown().optional(),
      /** Per chat id: its history (getChatHistory, newest first), e.g. replies that arrived. */
      chats: z.record(z.string(), z.unknown()).optional(),
    })
    .optional(),
  reports: z.array(ReportExpect).optional(),
  /**
   * Runs of the case's flows (its own, and its `flows:`) that must have
   * happened: each entry names a flow and a subset of its run record (status,
   * trigger, event, steps...); at least one run matches, or exactly `count`
   * (0: none may).
   */
  runs: z.array(RunExpect).optional(),
});

/** What a case may change of a local instance. */
const InstanceOverrides = z.strictObject({
  state: z.enum(INSTANCE_STATES).optional(),
  sendIntervalMs: z.number().int().min(500).optional(),
  rateLimits: RateLimitsSchema.optional(),
  checkAccountLimit: z
    .strictObject({
      numbers: z.number().int().positive().optional(),
      windowMinutes: z.number().positive().optional(),
      retryAfterSeconds: z.number().int().positive().optional(),
    })
    .optional(),
  /** Seed file (chats and messages), relative to the config file. */
  seed: z.string().optional(),
  /** Scripted failures: states at a time or after N sends, the chat quota, a webhook receiver down. */
  failures: FailuresSchema.optional(),
});

export const FlowTestCaseSchema = z.strictObject({
  /** What the case shows. */
  name: z.string().min(1),
  /** Flow name (or file name in flowsDir). */
  flow: z.string().min(1),
  /**
   * Other flows of flowsDir that run during the case as `msgflow start` would
   * start them: on the case's notifications (an opt-out flow on STOP) and on
   * its alerts (`on.alert`, `on.failure`: a campaign paused, a failed run).
   * The case waits for their runs; `expect.runs` names what they did.
   */
  flows: z.array(z.string().min(1)).optional(),
  /** Virtual time at the start (ISO 8601). @default 2026-01-05T08:00:00Z (a Monday) */
  start: z.iso.datetime({ offset: true }).default('2026-01-05T08:00:00Z'),
  /**
   * The case's time zone (its clock's, for plugins `ctx.clock.timeZone`):
   * what 'HH:MM' windows and schedules without a timezone mean. Fixed so that a
   * test passes the same on every machine. @default UTC
   */
  timezone: z.string().refine(validZone, { error: 'unknown IANA time zone' }).default('UTC'),
  /** Replaces these keys of local.network (accounts, delivery timings); the others stay the config's. */
  network: z
    .strictObject({
      name: z.string().optional(),
      accounts: z.array(AccountSchema).optional(),
      deliveredAfterMs: z.number().int().min(0).optional(),
      readAfterMs: z.number().int().min(0).optional(),
      /** Journal lag: a sent message shows in the journals this long after it was sent. */
      journalLagMs: z.number().int().min(0).optional(),
      /** A slow file host: urlFile fetches start this long after release. */
      fileHostDelayMs: z.number().int().min(0).optional(),
    })
    .optional(),
  /** Generated accounts added to the network: `count` numbers from `from`; every `every`-th one exists. */
  population: z
    .strictObject({
      from: z.union([z.number().int().positive(), z.string().regex(/^\d{1,20}$/)]).transform((v) => BigInt(v)),
      count: z.number().int().min(1).max(100_000),
      /** @default 1 (all) */
      every: z.number().int().min(1).default(1),
    })
    .optional(),
  /** Overrides of every local instance (state, sendIntervalMs, checkAccountLimit, rateLimits, seed). */
  instance: InstanceOverrides.optional(),
  /**
   * Overrides of one instance, by its config.yaml name (after `instance:`): e.g. one of a pool
   * turning yellowCard while the others send. Its local instance is the one with its idInstance.
   */
  instances: z.record(z.string(), InstanceOverrides).optional(),
  /** Messages already in the instance's chats (seed-file message objects). */
  messages: z.array(MessageInputSchema).optional(),
  /** Incoming messages that arrive while the flow runs. */
  replies: z.array(Reply).optional(),
  /**
   * A dialog script (a flow with a conversation): the steps in order, each
   * message starting its own run. `expect.status` then holds for every run of
   * the case's flow, and `expect.local` is read at the end.
   */
  script: z.array(ScriptStep).min(1).optional(),
  /** The contact of a script: its phone number. @default 79001112233 */
  chat: z
    .union([z.number().int().positive(), z.string().regex(/^\d{1,20}$/)])
    .transform((v) => String(v))
    .default('79001112233'),
  /**
   * The notification that triggers the run, as the service sends it (a flow
   * with `on.notification`); it must match the flow's trigger. It happens on
   * the local service as it would live: a message (incomingMessageReceived,
   * outgoingMessageReceived) arrives when the case starts (in the chat's
   * history and lastIncomingMessages), a stateInstanceChanged changes the
   * instance's state, an incomingCall rings, an incomingBlock is a contact
   * blocking the account, any other notification (quotaExceeded, deviceInfo,
   * a status) is queued as given; then the
   * notification consumer of `msgflow start` delivers it and starts the run,
   * whose `event` is the notification as the service sent it.
   */
  event: z.looseObject({ typeWebhook: z.enum(NOTIFICATION_TYPES) }).optional(),
  /** Input values: strings as `--input` gives them, inline rows, or a `sequence` of numbers. */
  inputs: z.record(z.string(), InputValue).optional(),
  /** Failures injected in front of the local service. */
  faults: z.array(Fault).optional(),
  /** URLs the local service fetches files from (sendFileByUrl), served by the test. */
  files: z.record(z.string(), FileUrl).optional(),
  /** Virtual time after which the case fails as hung. @default 30d */
  timeout: Duration.default('30d'),
  expect: Expect.default({ status: 'succeeded' }),
});

export const FlowTestFileSchema = z.strictObject({
  /** Cases run in order, each on a fresh local service and store. */
  cases: z.array(FlowTestCaseSchema).min(1),
});

export type FlowTestCase = z.output<typeof FlowTestCaseSchema>;
export type FlowTestFile = z.output<typeof FlowTestFileSchema>;
export type ScriptStep = z.output<typeof ScriptStep>;

/** JSON Schema of test files, for editors (`# yaml-language-server: $schema=...`). */
export function renderFlowTestJsonSchema(): string {
  const { $schema, ...rest } = z.toJSONSchema(FlowTestFileSchema, {
    io: 'input',
    unrepresentable: 'any',
    target: 'draft-2020-12',
  }) as Record<string, unknown>;
  return JSON.stringify({ $schema, title: 'msgflow flow test file', ...rest }, null, 2) + '\n';
}
