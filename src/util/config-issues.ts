import type { z } from 'zod';
import { ConfigError } from '../api/errors.js';
import { formatKeyPath, type KeyPath } from './yaml-source.js';

/** Turns zod issues into ConfigErrors that name file:line:col and the key path. */
export function issuesToConfigErrors(
  issues: readonly z.core.$ZodIssue[],
  locate: (p: KeyPath, opts?: { key?: boolean }) => string,
  code: 'CONFIG_INVALID' | 'FLOW_INVALID' = 'CONFIG_INVALID',
): ConfigError[] {
  const out: ConfigError[] = [];
  for (const issue of issues) {
    const p = issue.path as (string | number)[];
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) {
        out.push(new ConfigError(code, { location: locate([...p, k], { key: true }), path: formatKeyPath([...p, k]), reason: 'unknown key' }));
      }
      continue;
    }
    let reason = issue.message;
    if (issue.code === 'invalid_type' && issue.input === undefined) reason = 'required';
    out.push(new ConfigError(code, { location: locate(p), path: formatKeyPath(p), reason }));
  }
  return out;
}

