import { ConfigError } from '../api/errors.js';
import { expandEnv } from '../util/env-template.js';
import { SecretSource } from '../util/secret-source.js';
import path from 'node:path';
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

const SECRET_RE = /\$\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** The secret source a config's `secrets:` section describes (relative paths from `baseDir`). */
export function secretSourceFor(section: unknown, baseDir: string, env: NodeJS.ProcessEnv): SecretSource {
  const s = section !== null && typeof section === 'object' ? (section as Record<string, unknown>) : {};
  const at = (p: unknown) => (typeof p === 'string' && p !== '' ? path.resolve(baseDir, p) : undefined);
  return new SecretSource({ env, file: at(s.file), dir: at(s.dir), useEnv: s.env !== false });
}

/**
 * Replaces `${{ secrets.NAME }}` in every string of the config (its own
 * `secrets:` section says where values come from). A secret no source has
 * is SECRET_MISSING at its position, collected in `errors`.
 */
export function interpolateSecrets(
  value: unknown,
  baseDir: string,
  env: NodeJS.ProcessEnv,
  locate: (path: KeyPath) => string,
  errors: ConfigError[],
): unknown {
  const root = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  let source: SecretSource | undefined;
  const walk = (v: unknown, at: (string | number)[]): unknown => {
    if (typeof v === 'string') {
      return v.replace(SECRET_RE, (whole, name: string) => {
        source ??= secretSourceFor(root.secrets, baseDir, env);
        const found = source.get(name);
        if (found !== undefined) return found;
        errors.push(new ConfigError('SECRET_MISSING', { location: locate(at), path: formatKeyPath(at), name, sources: source.describe() }));
        return whole;
      });
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, [...at, i]));
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, [...at, k])]));
    return v;
  };
  return walk(value, []);
}
