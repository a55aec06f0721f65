import type { z } from 'zod';
import { ConfigError } from '../api/errors.js';
import { didYouMean } from './suggest.js';
import { formatKeyPath, type KeyPath } from './yaml-source.js';

/** Keys that name JavaScript object internals: refused wherever a user file sets a key. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  valueType?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
};
const defOf = (s: unknown): Def | undefined => (s as { _zod?: { def?: Def } })?._zod?.def;

/** The schemas that may describe the value at `path` (unions give several). */
function schemasAt(schema: z.ZodType, path: readonly (string | number)[]): z.ZodType[] {
  let current: z.ZodType[] = [schema];
  const unwrap = (s: z.ZodType): z.ZodType[] => {
    const d = defOf(s);
    if (!d) return [];
    if (d.innerType) return unwrap(d.innerType);
    if (d.type === 'pipe' && d.in) return unwrap(d.in);
    if (d.type === 'union' && d.options) return d.options.flatMap(unwrap);
    return [s];
  };
  current = current.flatMap(unwrap);
  for (const key of path) {
    const next: z.ZodType[] = [];
    for (const s of current) {
      const d = defOf(s)!;
      if (d.type === 'object' && d.shape && typeof key === 'string' && Object.hasOwn(d.shape, key)) next.push(d.shape[key]!);
      else if (d.type === 'record' && d.valueType) next.push(d.valueType);
      else if (d.type === 'array' && d.element && typeof key === 'number') next.push(d.element);
    }
    current = next.flatMap(unwrap);
  }
  return current;
}

/** The keys an object at `path` of `schema` may have: the candidates of a "did you mean". */
export function knownKeysAt(schema: z.ZodType | undefined, path: readonly (string | number)[]): string[] {
  if (!schema) return [];
  return schemasAt(schema, path).flatMap((s) => {
    const d = defOf(s)!;
    return d.type === 'object' && d.shape ? Object.keys(d.shape) : [];
  });
}

/**
 * The wording of a zod issue in a file msgflow reads (config.yaml, flow files,
 * flow tests): `required` for a missing key, `expected number, got 'many'`
 * for a wrong type, else the schema's own message.
 */
export function issueReason(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type' && issue.input === undefined) return 'required';
  if (issue.code === 'invalid_type') return `expected ${issue.expected}, got ${describeValue(issue.input)}`;
  return issue.message;
}

/** A value as a message shows it: `null`, `a list`, `a mapping`, `'text'` (cut at 40), `3`. */
export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return `'${v.length > 40 ? v.slice(0, 40) + '...' : v}'`;
  return String(v);
}

/**
 * Turns zod issues into ConfigErrors that name file:line:col and the key path;
 * an unknown key gets a "did you mean" from the keys `schema` allows there.
 */
export function issuesToConfigErrors(
  issues: readonly z.core.$ZodIssue[],
  locate: (p: KeyPath, opts?: { key?: boolean }) => string,
  code: 'CONFIG_INVALID' | 'FLOW_INVALID' = 'CONFIG_INVALID',
  schema?: z.ZodType,
): ConfigError[] {
  const out: ConfigError[] = [];
  for (const issue of issues) {
    const p = issue.path as (string | number)[];
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) {
        // Reserved names are reported by reservedKeyErrors, wherever they are.
        if (RESERVED_KEYS.has(k)) continue;
        const reason = `unknown key${didYouMean(k, knownKeysAt(schema, p))}`;
        out.push(new ConfigError(code, { location: locate([...p, k], { key: true }), path: formatKeyPath([...p, k]), reason }));
      }
      continue;
    }
    out.push(new ConfigError(code, { location: locate(p), path: formatKeyPath(p), reason: issueReason(issue) }));
  }
  return out;
}

/**
 * Every `__proto__`, `constructor` or `prototype` used as a key anywhere in
 * `value` (a record's names included, e.g. an instance or input name), as
 * errors with their position: they would reach object internals at run time.
 */
export function reservedKeyErrors(
  value: unknown,
  locate: (p: KeyPath, opts?: { key?: boolean }) => string,
  code: 'CONFIG_INVALID' | 'FLOW_INVALID' = 'CONFIG_INVALID',
  path: (string | number)[] = [],
): ConfigError[] {
  const out: ConfigError[] = [];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...reservedKeyErrors(v, locate, code, [...path, i])));
  else if (value !== null && typeof value === 'object') {
    for (const k of Object.keys(value)) {
      const p = [...path, k];
      if (RESERVED_KEYS.has(k))
        out.push(
          new ConfigError(code, {
            location: locate(p, { key: true }),
            path: formatKeyPath(p),
            reason: `'${k}' cannot be used as a key: it names JavaScript object internals`,
          }),
        );
      out.push(...reservedKeyErrors((value as Record<string, unknown>)[k], locate, code, p));
    }
  }
  return out;
}
