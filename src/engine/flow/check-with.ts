/**
 * Static check of a step's `with:` against its action's zod input schema:
 * unknown keys, missing required keys, and literal values that the schema
 * refuses. Values containing `${{ }}` are only known at run time, where the
 * runner validates the evaluated input again.
 */
import type { z } from 'zod';
import { containsTemplate } from '../expr/template.js';
import type { RegisteredAction } from '../registry/registry.js';
import { didYouMean } from '../registry/suggest.js';
import type { Reporter } from './reporter.js';

interface ZodDefLike {
  type: string;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  in?: z.ZodType;
  innerType?: z.ZodType;
}

function defOf(s: z.ZodType): ZodDefLike {
  return (s as unknown as { _zod: { def: ZodDefLike } })._zod.def;
}

/** The object schema at the heart of an input schema (through transforms/pipes), if it is one. */
export function objectShapeOf(schema: z.ZodType): { shape: Record<string, z.ZodType>; strict: boolean } | undefined {
  let s = schema;
  for (let i = 0; i < 10; i++) {
    const def = defOf(s);
    if (def.type === 'object' && def.shape) {
      // No catchall (strip) or `never` (strict): keys outside the shape are mistakes.
      const strict = def.catchall === undefined || defOf(def.catchall).type === 'never';
      return { shape: def.shape, strict };
    }
    if (def.type === 'pipe' && def.in) s = def.in;
    else return undefined;
  }
  return undefined;
}

export function checkWithInput(
  rep: Reporter,
  path: (string | number)[],
  withValue: Record<string, unknown>,
  action: RegisteredAction,
  withAbsent = false,
): void {
  const obj = objectShapeOf(action.input as z.ZodType);
  if (!obj) {
    // A non-object input schema: check the whole value when it is all literal.
    if (!containsTemplate(withValue)) reportIssues(rep, path, (action.input as z.ZodType).safeParse(withValue), action.name);
    return;
  }
  const known = Object.keys(obj.shape);
  if (obj.strict) {
    for (const k of Object.keys(withValue)) {
      if (!(k in obj.shape)) {
        rep.add(
          [...path, k],
          `unknown key '${k}' for action '${action.name}'${didYouMean(k, known)}; it takes ${known.join(', ') || 'nothing'}`,
          { key: true },
        );
      }
    }
  }
  for (const [k, field] of Object.entries(obj.shape)) {
    const v = withValue[k];
    if (v === undefined) {
      if (!field.safeParse(undefined).success) {
        rep.add(path, `action '${action.name}' needs '${k}' in with:${withAbsent ? ' (the step has no with:)' : ''}`);
      }
      continue;
    }
    if (containsTemplate(v)) continue;
    reportIssues(rep, [...path, k], field.safeParse(v), action.name);
  }
  const broken = action.checkWith?.(withValue);
  if (broken) rep.add(path, `${broken} (action '${action.name}')`);
}

function reportIssues(rep: Reporter, path: (string | number)[], result: z.ZodSafeParseResult<unknown>, action: string): void {
  if (result.success) return;
  const seen = new Set<string>();
  for (const issue of result.error.issues) {
    const p = [...path, ...(issue.path as (string | number)[])];
    const reason = `${issue.message} (action '${action}')`;
    const key = `${p.join('.')}|${reason}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rep.add(p, reason);
  }
}
