/**
 * A pool of instances that share a campaign (messages.broadcast,
 * docs/campaigns.md): the one shape of config.yaml's named `pools:` and of a
 * broadcast step's `pool:`, which names one of them (`pool: marketing`),
 * names one and changes some of its fields for the step (`pool: { use:
 * marketing, dailyCap: 100 }`), or is written out in full.
 */
import { z } from 'zod';
import { PaceSchema } from './pace.js';

/** The fields a pool has; a step that `use`s a named pool may change any but its instances. */
const settings = {
  pace: PaceSchema.optional().describe("Each instance's own pause between two of its sends: { delay, jitter }. @default none"),
  dailyCap: z.number().int().positive().optional().describe('Most broadcast sends per instance and day (all campaigns). @default no cap'),
  warmup: z
    .strictObject({
      from: z.number().int().positive().describe('Sends on the first day.'),
      to: z.number().int().positive().describe('Sends per day once warmed up.'),
      days: z.number().int().positive().describe('Days from `from` to `to`, rising evenly.'),
    })
    .optional()
    .describe("A new number's ramp: its daily cap rises from `from` to `to` over `days`, counted from its first broadcast send."),
};

const onUnhealthy = z
  .enum(['move', 'wait'])
  .describe("An unhealthy instance's recipients not yet sent: `move` to the others, or `wait` for the lift. @default move");

const instances = z.array(z.string().min(1)).min(1).describe('Instances of config.yaml that share the campaign (their names).');

export const PoolSchema = z
  .strictObject({ instances, ...settings, onUnhealthy: onUnhealthy.default('move') })
  .describe('A pool of instances: { instances, pace, dailyCap, warmup, onUnhealthy }. Each recipient keeps one sender.');

export type Pool = z.output<typeof PoolSchema>;

/** A pool's name in config.yaml (`pools:` keys, what `pool:` and `pool.use` name). */
export const POOL_NAME = /^[A-Za-z0-9_-]+$/;

/** A step's `pool:` as written: a name, a named pool with changes (`use`), or a whole pool. */
export const StepPoolSchema = z
  .union([
    z.string().regex(POOL_NAME, { error: 'expected the name of a pool of config.yaml (letters, digits, _ or -)' }),
    z
      .strictObject({
        use: z
          .string()
          .regex(POOL_NAME, { error: 'expected the name of a pool of config.yaml (letters, digits, _ or -)' })
          .optional()
          .describe("A pool of config.yaml's `pools:` by name; the other fields given change it for this step."),
        instances: instances.optional(),
        ...settings,
        onUnhealthy: onUnhealthy.optional(),
      })
      .refine((p) => (p.use === undefined) !== (p.instances === undefined), {
        error: 'give instances, or use: the name of a pool of config.yaml (not both)',
      }),
  ])
  .describe(
    'A pool of instances: the name of one of config.yaml `pools:`, { use: <name>, ...what changes for this step }, or { instances, pace, dailyCap, warmup, onUnhealthy }.',
  );

export type StepPool = z.output<typeof StepPoolSchema>;

/** The name of config.yaml's pool a step's `pool:` uses, if it uses one. */
export function poolNameOf(p: StepPool | undefined): string | undefined {
  return typeof p === 'string' ? p : p?.use;
}

/**
 * The pool a step sends from: its own, or the named one with the step's
 * changes; the reason's text when the name is unknown.
 */
export function resolvePool(p: StepPool, named: Readonly<Record<string, Pool>>): Pool | string {
  const name = poolNameOf(p);
  if (name === undefined) return PoolSchema.parse(p);
  const base = Object.hasOwn(named, name) ? named[name] : undefined;
  if (!base) {
    const known = Object.keys(named);
    return `no pool '${name}' in config.yaml (its pools: ${known.length > 0 ? known.join(', ') : 'none'})`;
  }
  const changes = typeof p === 'string' ? {} : Object.fromEntries(Object.entries(p).filter(([k, v]) => k !== 'use' && v !== undefined));
  return { ...base, ...changes };
}
