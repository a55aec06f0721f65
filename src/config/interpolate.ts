import { ConfigError } from '../api/errors.js';
import { formatKeyPath, type KeyPath } from '../util/yaml-source.js';

// `${NAME}` or `${NAME:-default}`; `${{` starts a flow expression and is left alone.
const ENV_RE = /\$\{(?!\{)([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

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
    return value.replace(ENV_RE, (whole, name: string, def: string | undefined) => {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (def !== undefined) return def;
      const err = new ConfigError('ENV_MISSING', { location: locate(path), path: formatKeyPath(path), name });
      if (!errors) throw err;
      errors.push(err);
      return whole;
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
