/**
 * config.yaml. Every default lives here, unknown keys are errors, and the
 * loaded config is frozen.
 */
import { z } from 'zod';
import { ClientTuningFields } from '../client/options.js';
import { LocalSchema } from '../local/config.js';
import { StoreSchema, type StoreConfig } from '../store/config.js';
import { privateAllowance } from '../util/address-range.js';
import { DURATION_HINT, parseDuration } from '../util/duration.js';
import { POOL_NAME, PoolSchema } from '../util/pool.js';

export { StoreSchema, type StoreConfig };

export const InstanceSchema = z
  .strictObject({
    /** Base URL of the service, or `local` for msgflow's built-in local service. */
    apiUrl: z.union([z.literal('local'), z.string().regex(/^https?:\/\/[^\s]+$/i, { error: "expected 'local' or an http(s):// URL" })]),
    /** Instance id. With `apiUrl: local`, optional: the first local instance. */
    idInstance: z
      .union([z.string().regex(/^\d{1,20}$/, { error: 'expected digits' }), z.number().int().positive()])
      .transform((v) => String(v))
      .optional(),
    apiTokenInstance: z.string().min(1, { error: 'expected a non-empty token' }).optional(),
    // The client's own rules (client/options.ts), so config.yaml accepts exactly what createClient does.
    /** Per-attempt timeout, ms. @default 30000 */
    timeoutMs: ClientTuningFields.timeoutMs.optional(),
    /** Retries after the first attempt. @default 3 */
    retries: ClientTuningFields.retries.optional(),
    /** Client-side requests/second per method, fractions allowed (0.5: one every 2 s); 0 = unlimited. @default the published limits */
    rateLimits: ClientTuningFields.rateLimits.optional(),
    /** Turn client-side rate limiting off. @default true */
    rateLimit: ClientTuningFields.rateLimit.optional(),
    /**
     * How `msgflow start` receives this instance's notifications
     * (docs/notifications.md): `poll` (receiveNotification/deleteNotification),
     * `webhook` (the service pushes them to msgflow's `webhook:` server) or
     * `off`. @default poll when a flow is triggered by them or waits for
     * replies on the instance (waitForReply), else off
     */
    notifications: z.enum(['poll', 'webhook', 'off']).optional(),
  })
  .superRefine((v, ctx) => {
    if (v.apiUrl !== 'local') {
      if (v.idInstance === undefined) ctx.addIssue({ code: 'custom', path: ['idInstance'], message: 'required for a remote apiUrl' });
      if (v.apiTokenInstance === undefined)
        ctx.addIssue({ code: 'custom', path: ['apiTokenInstance'], message: 'required for a remote apiUrl' });
    }
  });

/** Each entry of `http.allowPrivate` is a host name, an IP address or a CIDR range (util/address-range.ts reads them). */
function checkAllowance(list: string[], ctx: z.RefinementCtx): void {
  list.forEach((entry, i) => {
    try {
      privateAllowance([entry]);
    } catch (e) {
      ctx.addIssue({ code: 'custom', path: [i], message: (e as Error).message });
    }
  });
}

/** The dashboard and HTTP API of `msgflow start` / `msgflow ui` (docs/dashboard.md). */
export const UiSchema = z.strictObject({
  /** TCP port; 0 picks a free one. @default 7071 */
  port: z.number().int().min(0).max(65535).default(7071),
  /** Address to bind. A non-loopback address requires `token`. @default 127.0.0.1 */
  host: z.string().min(1).default('127.0.0.1'),
  /** Bearer token every state-changing request must carry; empty: none (loopback only). @default '' */
  token: z.string().default(''),
});

/** The server `msgflow start` receives webhook notifications on (instances with `notifications: webhook`). */
export const WebhookSchema = z.strictObject({
  /** TCP port; 0 picks a free one. @default 7072 */
  port: z.number().int().min(0).max(65535).default(7072),
  /** Address to bind. @default 127.0.0.1 */
  host: z.string().min(1).default('127.0.0.1'),
  /** Path the service posts to (its webhookUrl's path). @default /webhook */
  path: z
    .string()
    .regex(/^\/[^\s?#]*$/, { error: "expected a path starting with '/'" })
    .default('/webhook'),
  /** Bearer token every request must carry (the instance's webhookUrlToken); requests without it get 401. */
  token: z.string().min(8, { error: 'expected a token of at least 8 characters' }),
});

/**
 * Where forEach items run (docs/distributed.md). `bullmq`: on `msgflow worker`
 * processes over Redis, which needs `store: { driver: redis }`.
 */
export const ExecutorSchema = z.strictObject({
  /** `local`: in the process that runs the flow; `bullmq`: on BullMQ workers. @default local */
  driver: z.enum(['local', 'bullmq']).default('local'),
  /** Redis URL of the queues. @default the store's url, else redis://127.0.0.1:6379 */
  url: z
    .string()
    .regex(/^rediss?:\/\/\S+$/, { error: 'expected a redis:// or rediss:// URL' })
    .optional(),
  /** BullMQ key prefix, so that two projects on one Redis never work each other's items. @default the store's prefix followed by `bull` */
  prefix: z.string().min(1).optional(),
  /**
   * How long a worker's lock on an item lasts without renewal: a worker killed
   * with kill -9 gives its items back after about this long. @default 30000
   */
  lockDurationMs: z.number().int().min(100).default(30_000),
  /** How often workers look for items whose worker died. @default 30000 */
  stalledIntervalMs: z.number().int().min(100).default(30_000),
  /**
   * How long a message the service sent may take to appear in its chat
   * history (the service documents up to 2 minutes): a send whose worker died
   * once it had left, found in neither the send queue nor the history this
   * long after, never reached the service and is made again. @default 120000
   */
  journalLagMs: z.number().int().min(0).default(120_000),
});

export type ExecutorConfig = z.output<typeof ExecutorSchema>;

/** Whether a text compiles as a case-insensitive regular expression (what the dispatcher compiles). */
const compiles = (re: string) => {
  try {
    new RegExp(re, 'i');
    return true;
  } catch {
    return false;
  }
};

/**
 * Human handover (docs/notifications.md): when the operator writes to a chat
 * from the phone (an `outgoingMessageReceived` notification), the bot keeps
 * quiet in that chat.
 */
export const HandoverConfigSchema = z
  .strictObject({
    /** How long the bot keeps quiet after the operator's last message, e.g. 30m. @default 30m */
    quiet: z
      .union([z.string(), z.number()])
      .default('30m')
      .refine((v) => (parseDuration(v) ?? 0) > 0, { error: `expected a duration above 0: ${DURATION_HINT}` })
      .transform((v) => parseDuration(v)!),
    /** The operator's message that gives the chat back to the bot at once: a case-insensitive regular expression on the trimmed text, e.g. ^#bot$. @default none */
    resume: z.string().min(1).refine(compiles, { error: 'expected a regular expression that compiles' }).optional(),
  })
  .transform(({ quiet, ...h }) => ({ ...h, quietMs: quiet }));

/** Conversations with the accounts' users. */
export const ConversationsSchema = z.strictObject({
  /** The bot goes quiet in a chat the operator writes to from the phone. @default off (the operator's messages hand nothing over) */
  handover: HandoverConfigSchema.optional(),
});

/** `secrets:`: where `${{ secrets.NAME }}` values come from, looked up in this order. */
export const SecretsSchema = z
  .strictObject({
    /** Look in the environment first. @default true */
    env: z.boolean().default(true),
    /** A `.env`-style file (NAME=value lines), relative to this file; keep it outside the repository. */
    file: z.string().min(1).optional(),
    /** A directory with one file per secret, named after it (Docker / Kubernetes: /run/secrets). */
    dir: z.string().min(1).optional(),
  })
  .meta({ description: 'Where ${{ secrets.NAME }} values come from: the environment, then file, then dir.' });

/** OpenTelemetry traces (runtime/telemetry.ts): off unless given. */
export const TelemetrySchema = z.strictObject({
  /** OTLP/HTTP traces endpoint of a collector, e.g. http://127.0.0.1:4318/v1/traces (may use ${VAR:-default}). */
  otlp: z.url({
    protocol: /^https?$/,
    error: 'expected an http(s) URL of an OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces',
  }),
  /** The traces' service.name. @default msgflow */
  serviceName: z.string().min(1).default('msgflow'),
});

export const ConfigSchema = z
  .strictObject({
    /** Named instances flows refer to with `instance:`. */
    instances: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/, { error: 'expected letters, digits, _ or -' }), InstanceSchema).default({}),
    /**
     * Named pools of instances that share campaigns (docs/campaigns.md): a
     * messages.broadcast step's `pool: <name>` (or `pool: { use: <name>, ... }`
     * to change some of its fields). @default {}
     */
    pools: z.record(z.string().regex(POOL_NAME, { error: 'expected letters, digits, _ or -' }), PoolSchema).default({}),
    /** msgflow's built-in local service (see docs/local-service.md). */
    local: LocalSchema.optional(),
    /** Flow files directory (relative to the config file). @default flows */
    flowsDir: z.string().default('flows'),
    store: StoreSchema.default({ driver: 'lowdb', dir: '.msgflow/state' }),
    /** Action plugins: paths (relative to the config file) or npm package names. */
    plugins: z.array(z.string().min(1)).default([]),
    /** Log level of the daemon. @default info */
    logLevel: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
    /** Dashboard and HTTP API. @default { port: 7071, host: 127.0.0.1, token: '' } */
    ui: UiSchema.default({ port: 7071, host: '127.0.0.1', token: '' }),
    /** Webhook receiver of `msgflow start`, for instances with `notifications: webhook`. */
    webhook: WebhookSchema.optional(),
    /** When the daemon raises alerts (engine/alerts). @default { notificationLagMinutes: 10 } */
    alerts: z
      .strictObject({
        /** A notification received this many minutes after it was sent raises notification-lag. @default 10 */
        notificationLagMinutes: z.number().positive().default(10),
      })
      .default({ notificationLagMinutes: 10 }),
    /**
     * http.request's reach: `allowPrivate: true` lets every step call loopback, private and
     * link-local addresses; a list allows only those host names, IP addresses and CIDR ranges
     * (e.g. `[crm.lan, 10.20.0.0/16]`). A step's own `allowPrivate: true` still allows any.
     * @default { allowPrivate: false }
     */
    http: z
      .strictObject({
        allowPrivate: z.union([z.boolean(), z.array(z.string().min(1)).superRefine(checkAllowance)]).default(false),
      })
      .default({ allowPrivate: false }),
    /** Where `${{ secrets.NAME }}` values come from (flows and this file). @default the environment only */
    secrets: SecretsSchema.optional(),
    /** Where forEach items run. @default { driver: local } */
    executor: ExecutorSchema.default({ driver: 'local', lockDurationMs: 30_000, stalledIntervalMs: 30_000, journalLagMs: 120_000 }),
    /** Conversations: human handover. @default {} */
    conversations: ConversationsSchema.default({}),
    /** OpenTelemetry traces of runs, steps, items and client calls. @default off */
    telemetry: TelemetrySchema.optional(),
  })
  .superRefine((v, ctx) => {
    if (v.webhook) return;
    for (const [name, inst] of Object.entries(v.instances)) {
      if (inst.notifications === 'webhook') {
        ctx.addIssue({
          code: 'custom',
          path: ['instances', name, 'notifications'],
          message: 'webhook needs a top-level webhook: { port, path, token } section (the server msgflow start receives them on)',
        });
      }
    }
  });

export type InstanceConfig = z.output<typeof InstanceSchema>;
export type ConfigData = z.output<typeof ConfigSchema>;
export type UiConfig = z.output<typeof UiSchema>;
export type WebhookConfig = z.output<typeof WebhookSchema>;
