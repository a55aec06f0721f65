/**
 * config.yaml. Every default lives here, unknown keys are errors, and the
 * loaded config is frozen.
 */
import { z } from 'zod';
import { RateLimitsSchema, LocalSchema } from '../local/config.js';
import { StoreSchema, type StoreConfig } from '../store/config.js';

export { StoreSchema, type StoreConfig };

export const InstanceSchema = z
  .strictObject({
    /** Base URL of the service, or `local` for msgflow's built-in local service. */
    apiUrl: z.union([
      z.literal('local'),
      z.string().regex(/^https?:\/\/[^\s]+$/i, { error: "expected 'local' or an http(s):// URL" }),
    ]),
    /** Instance id. With `apiUrl: local`, optional: the first local instance. */
    idInstance: z.union([z.string().regex(/^\d{1,20}$/, { error: 'expected digits' }), z.number().int().positive()])
      .transform((v) => String(v))
      .optional(),
    apiTokenInstance: z.string().min(1, { error: 'expected a non-empty token' }).optional(),
    /** Per-attempt timeout, ms. @default 30000 */
    timeoutMs: z.number().int().positive().optional(),
    /** Retries after the first attempt. @default 3 */
    retries: z.number().int().min(0).max(20).optional(),
    /** Client-side requests/second per method; 0 = unlimited. @default the published limits */
    rateLimits: RateLimitsSchema.optional(),
    /** Turn client-side rate limiting off. @default true */
    rateLimit: z.boolean().optional(),
  })
  .superRefine((v, ctx) => {
    if (v.apiUrl !== 'local') {
      if (v.idInstance === undefined) ctx.addIssue({ code: 'custom', path: ['idInstance'], message: 'required for a remote apiUrl' });
      if (v.apiTokenInstance === undefined)
        ctx.addIssue({ code: 'custom', path: ['apiTokenInstance'], message: 'required for a remote apiUrl' });
    }
  });

/** The dashboard and HTTP API of `msgflow start` / `msgflow ui` (docs/dashboard.md). */
export const UiSchema = z.strictObject({
  /** TCP port; 0 picks a free one. @default 7071 */
  port: z.number().int().min(0).max(65535).default(7071),
  /** Address to bind. A non-loopback address requires `token`. @default 127.0.0.1 */
  host: z.string().min(1).default('127.0.0.1'),
  /** Bearer token every state-changing request must carry; empty: none (loopback only). @default '' */
  token: z.string().default(''),
});

/**
 * Where forEach items run (docs/distributed.md). `bullmq`: on `msgflow worker`
 * processes over Redis, which needs `store: { driver: redis }`.
 */
export const ExecutorSchema = z.strictObject({
  /** `local`: in the process that runs the flow; `bullmq`: on BullMQ workers. @default local */
  driver: z.enum(['local', 'bullmq']).default('local'),
  /** Redis URL of the queues. @default the store's url, else redis://127.0.0.1:6379 */
  url: z.string().regex(/^rediss?:\/\/\S+$/, { error: 'expected a redis:// or rediss:// URL' }).optional(),
  /** BullMQ key prefix, so that two projects on one Redis never work each other's items. @default the store's prefix followed by `bull` */
  prefix: z.string().min(1).optional(),
  /**
   * How long a worker's lock on an item lasts without renewal: a worker killed
   * with kill -9 gives its items back after about this long. @default 30000
   */
  lockDurationMs: z.number().int().min(100).default(30_000),
  /** How often workers look for items whose worker died. @default 30000 */
  stalledIntervalMs: z.number().int().min(100).default(30_000),
});

export type ExecutorConfig = z.output<typeof ExecutorSchema>;

export const ConfigSchema = z.strictObject({
  /** Named instances flows refer to with `instance:`. */
  instances: z.record(z.string().regex(/^[A-Za-z0-9_-]+$/, { error: 'expected letters, digits, _ or -' }), InstanceSchema).default({}),
  /** msgflow's built-in local service (see the README). */
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
  /** Where forEach items run. @default { driver: local } */
  executor: ExecutorSchema.default({ driver: 'local', lockDurationMs: 30_000, stalledIntervalMs: 30_000 }),
});

export type InstanceConfig = z.output<typeof InstanceSchema>;
export type ConfigData = z.output<typeof ConfigSchema>;
export type UiConfig = z.output<typeof UiSchema>;
