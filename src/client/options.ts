/**
 * createClient's options: one zod schema holds every rule and every default,
 * so the README, the config loader and the client cannot disagree. The parsed
 * result is frozen: a client's behaviour cannot change under its feet.
 */
import { z } from 'zod';
import { API_METHODS, type ApiMethod, defaultRateLimits } from '../api/methods.js';
import { redact } from '../api/redact.js';
import { ValidationError } from '../api/errors.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import type { Transport } from './transport.js';

/** Where the client writes its debug lines: the one Logger every layer shares. */
export type ClientLogger = Logger;

/** How a backoff delay is randomised (see computeBackoff). */
export type { JitterMode } from '../util/backoff.js';
import type { JitterMode } from '../util/backoff.js';

/** The defaults, in one place. */
export const CLIENT_DEFAULTS = Object.freeze({
  timeoutMs: 30_000,
  retries: 3,
  retryBaseDelayMs: 500,
  retryMaxDelayMs: 30_000,
  retryJitter: 'full' as JitterMode,
  rateLimit: true,
  userAgent: 'msgflow',
});

/**
 * Options of {@link createClient}.
 *
 * @example
 * const client = createClient({
 *   apiUrl: 'https://api.example.com',
 *   idInstance: process.env.ID_INSTANCE!,
 *   apiTokenInstance: process.env.API_TOKEN!,
 *   rateLimits: { checkAccount: 2 },
 * });
 */
export interface ClientOptions {
  /** Base URL of the service (`{base_url}` of the spec). Required unless `transport` is given. */
  apiUrl?: string;
  /** Instance id, placed in the path after `waInstance`. Never logged. */
  idInstance: string | number;
  /** Instance token, the last path segment. A secret: never logged, never in an error. */
  apiTokenInstance: string;
  /** Per-attempt timeout in ms. @default 30000 */
  timeoutMs?: number;
  /** Retries after the first attempt (so `retries: 3` means up to 4 attempts). @default 3 */
  retries?: number;
  /** Backoff of the first retry, doubled on each further one. @default 500 */
  retryBaseDelayMs?: number;
  /**
   * Cap of a backoff delay. A Retry-After longer than this is not slept
   * through: the error is thrown at once with its `retryAfterMs`, so that the
   * caller (e.g. the flow engine) can wait durably instead. @default 30000
   */
  retryMaxDelayMs?: number;
  /** `full`: uniform in [0, d]; `equal`: uniform in [d/2, d]. @default 'full' */
  retryJitter?: JitterMode;
  /**
   * Client-side requests/second per method; 0 means unlimited. Methods left
   * out keep the service's published rate (METHOD_SPECS).
   * @default METHOD_SPECS[m].defaultRatePerSecond
   */
  rateLimits?: Partial<Record<ApiMethod, number>>;
  /** `false` switches client-side rate limiting off. @default true */
  rateLimit?: boolean;
  /** Receives one debug line per attempt (method, redacted path, status, duration, attempt). */
  logger?: ClientLogger;
  /** Time source for backoff and rate-limit waits. @default systemClock */
  clock?: Clock;
  /**
   * Advanced: how requests travel. The local service's in-process transport
   * goes here. A transport given here is owned by the caller: `close()` of
   * the client does not close it. @default an HTTP transport (undici) on apiUrl
   */
  transport?: Transport;
  /** User-Agent header of the HTTP transport. @default 'msgflow' */
  userAgent?: string;
  /**
   * The instance's name in messages (config.yaml's key, e.g. `default`): a
   * connection refused on the first call names it with the apiUrl. Never the
   * id. @default none: the message names the apiUrl only
   */
  name?: string;
}

/** Options after validation: defaults applied, frozen. */
export interface ResolvedClientOptions {
  readonly apiUrl?: string;
  readonly idInstance: string;
  readonly apiTokenInstance: string;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly retryBaseDelayMs: number;
  readonly retryMaxDelayMs: number;
  readonly retryJitter: JitterMode;
  readonly rateLimits: Readonly<Record<ApiMethod, number>>;
  readonly rateLimit: boolean;
  readonly logger?: ClientLogger;
  readonly clock?: Clock;
  readonly transport?: Transport;
  readonly userAgent: string;
  readonly name?: string;
}

// Path segments are not URL-encoded (the spec gives them verbatim), so they
// must not be able to change the path: no '/', '?', '#', '%' or spaces.
const PATH_SAFE = /^[A-Za-z0-9._~-]+$/;

const hasFunctions = (names: string[]) => (v: unknown) =>
  v !== null && typeof v === 'object' && names.every((n) => typeof (v as Record<string, unknown>)[n] === 'function');

const ms = (what: string) => z.number({ error: `expected ${what} in ms` }).int({ error: 'expected an integer' });

const rateLimitsSchema = z.strictObject(
  Object.fromEntries(
    API_METHODS.map((m) => [
      m,
      z
        .number({ error: 'expected requests/second (0 = unlimited)' })
        .min(0, { error: 'expected requests/second (0 = unlimited)' })
        .refine(Number.isFinite, { error: 'expected a finite number' })
        .optional(),
    ]),
  ) as Record<ApiMethod, z.ZodOptional<z.ZodNumber>>,
);

/**
 * The tuning options as config.yaml `instances.<name>` also takes them
 * (without defaults: config/schema.ts leaves unset ones to the client). One
 * declaration, so a value config.yaml accepts is one the client accepts:
 * requests/second may be fractions (0.5 = one request every 2 s), since the
 * client spaces requests. (The local service's own `rateLimits` are whole
 * numbers: it counts requests in one-second windows.)
 */
export const ClientTuningFields = {
  timeoutMs: ms('a timeout').positive({ error: 'expected a positive timeout' }),
  retries: z
    .number({ error: 'expected a number of retries' })
    .int({ error: 'expected an integer' })
    .min(0, { error: 'expected 0 or more' })
    .max(20, { error: 'expected at most 20' }),
  rateLimits: rateLimitsSchema,
  rateLimit: z.boolean({ error: 'expected true or false' }),
};

const optionsSchema = z
  .strictObject({
    apiUrl: z
      .string({ error: 'expected an http(s):// URL' })
      .refine(isHttpUrl, { error: 'expected an http(s):// URL without query or fragment' })
      .transform((s) => s.replace(/\/+$/, ''))
      .optional(),
    idInstance: z
      .union([z.string(), z.number().int().positive()], { error: 'expected a string or a positive integer' })
      .transform(String)
      .refine((s) => PATH_SAFE.test(s), { error: "expected letters, digits, '.', '_', '~' or '-'" }),
    apiTokenInstance: z
      .string({ error: 'expected a string' })
      .refine((s) => PATH_SAFE.test(s), { error: "expected a non-empty token of letters, digits, '.', '_', '~' or '-'" }),
    timeoutMs: ClientTuningFields.timeoutMs.default(CLIENT_DEFAULTS.timeoutMs),
    retries: ClientTuningFields.retries.default(CLIENT_DEFAULTS.retries),
    retryBaseDelayMs: ms('a delay').min(0, { error: 'expected 0 or more' }).default(CLIENT_DEFAULTS.retryBaseDelayMs),
    retryMaxDelayMs: ms('a delay').min(0, { error: 'expected 0 or more' }).default(CLIENT_DEFAULTS.retryMaxDelayMs),
    retryJitter: z.enum(['full', 'equal'], { error: "expected 'full' or 'equal'" }).default(CLIENT_DEFAULTS.retryJitter),
    rateLimits: ClientTuningFields.rateLimits
      .default({})
      .transform((given) => Object.freeze({ ...defaultRateLimits(), ...stripUndefined(given) })),
    rateLimit: ClientTuningFields.rateLimit.default(CLIENT_DEFAULTS.rateLimit),
    logger: z
      .custom<ClientLogger>(hasFunctions(['debug', 'info', 'warn', 'error']), {
        error: 'expected an object with debug, info, warn and error functions',
      })
      .optional(),
    clock: z.custom<Clock>(hasFunctions(['now', 'sleep']), { error: 'expected a Clock (now, sleep)' }).optional(),
    transport: z.custom<Transport>(hasFunctions(['request']), { error: 'expected a Transport (request function)' }).optional(),
    userAgent: z.string({ error: 'expected a string' }).default(CLIENT_DEFAULTS.userAgent),
    name: z.string({ error: 'expected a string' }).min(1, { error: 'expected a non-empty name' }).optional(),
  })
  .superRefine((o, ctx) => {
    if (o.apiUrl === undefined && o.transport === undefined) {
      ctx.addIssue({ code: 'custom', path: ['apiUrl'], message: 'required (or pass a transport)' });
    }
    if (o.retryMaxDelayMs < o.retryBaseDelayMs) {
      ctx.addIssue({ code: 'custom', path: ['retryMaxDelayMs'], message: 'must not be less than retryBaseDelayMs' });
    }
  });

function isHttpUrl(s: string): boolean {
  if (!/^https?:\/\//i.test(s)) return false;
  try {
    const u = new URL(s);
    return u.hostname.length > 0 && u.search === '' && u.hash === '' && u.username === '' && u.password === '';
  } catch {
    return false;
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Validates createClient's options and applies the defaults.
 *
 * @throws ValidationError code `CLIENT_OPTIONS_INVALID`, `field` = the key
 *   path (e.g. `rateLimits.getChat`), message naming it; secrets redacted.
 */
export function parseClientOptions(input: unknown): ResolvedClientOptions {
  const result = optionsSchema.safeParse(input);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const path = [...issue.path.map(String), ...keys.slice(0, 1)].join('.');
    const reason =
      issue.code === 'unrecognized_keys' ? `unknown option${keys.length > 1 ? ` (also: ${keys.slice(1).join(', ')})` : ''}` : issue.message;
    const secrets = secretsOf(input);
    const details = redact(path ? `${path}: ${reason}` : reason, secrets);
    throw new ValidationError(details, path || undefined, { code: 'CLIENT_OPTIONS_INVALID' });
  }
  return Object.freeze(result.data) as ResolvedClientOptions;
}

/** The secrets of raw (maybe invalid) options, for redacting their errors. */
function secretsOf(input: unknown): { idInstance?: string; apiTokenInstance?: string } {
  if (input === null || typeof input !== 'object') return {};
  const o = input as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : undefined);
  return { idInstance: str(o.idInstance), apiTokenInstance: str(o.apiTokenInstance) };
}
