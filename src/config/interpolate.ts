import { ConfigError } from '../api/errors.js';
import { expandEnv } from '../util/env-template.js';
import { formatKeyPath, type KeyPath } from '../util/yaml-source.js';

/**
 * Replaces `${ENV_VAR}` and `${ENV_VAR:-default}` in every string of `value`,
 * so secrets stay out of config files. An unset variable with no default is an
 * error naming where it was used (never its would-be value).
 */
export function interpolateEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  locate: (path: KeyPath) => string,
  path: (string | number)[] = [],
  /** When given, missing variables are collected here (every one reported) instead of thrown. */
  errors?: ConfigError[],
): unknown {
  if (typeof value === 'string') {
    return expandEnv(value, env, (name) => {
      const err = new ConfigError('ENV_MISSING', { location: locate(path), path: formatKeyPath(path), name });
      if (!errors) throw err;
      errors.push(err);
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolateEnv(v, env, locate, [...path, i], errors));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolateEnv(v, env, locate, [...path, k], errors);
    return out;
  }
  return value;
}
