import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { combineErrors, ConfigError, MsgflowError } from '../api/errors.js';
import { issuesToConfigErrors, reservedKeyErrors } from '../util/config-issues.js';
import { formatKeyPath, parseYamlSource, type KeyPath } from '../util/yaml-source.js';
import { interpolateEnv, interpolateSecrets } from './interpolate.js';
import { ConfigSchema, type ConfigData } from './schema.js';
import { deepFreeze } from '../util/freeze.js';
import { didYouMean } from '../util/suggest.js';

/** A validated, frozen config plus where it came from. */
export interface Config extends ConfigData {
  /** Absolute path of the file, or `<inline>`. */
  readonly file: string;
  /** Directory relative paths in the config resolve against. */
  readonly baseDir: string;
  /** Working directory it was loaded from: messages show file names relative to it ({@link LoadConfigOptions.cwd}). */
  readonly cwd: string;
}

export { issuesToConfigErrors };

export interface LoadConfigOptions {
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Directory a relative file resolves against and error positions are shown relative to. @default process.cwd() */
  cwd?: string;
}

/** Parses and validates config text. Throws a ConfigError (or an aggregate of them). */
export function parseConfig(text: string, file: string, options: LoadConfigOptions = {}): Config {
  const display = path.isAbsolute(file) ? path.relative(options.cwd ?? process.cwd(), file) || file : file;
  let src;
  try {
    src = parseYamlSource(text, display);
  } catch (e) {
    if (e instanceof MsgflowError) throw new ConfigError(e.code, e.params as Record<string, unknown>, { cause: e });
    throw e;
  }
  const raw = src.value ?? {};
  // Every problem of the file at once, in file order: a user fixes them in one pass.
  const errors: ConfigError[] = reservedKeyErrors(raw, src.locate);
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const abs = path.resolve(cwd, file);
  const withEnv = interpolateEnv(raw, options.env ?? process.env, (p) => src.locate(p), [], errors);
  const interpolated = interpolateSecrets(withEnv, path.dirname(abs), options.env ?? process.env, (p) => src.locate(p), errors);
  const result = ConfigSchema.safeParse(interpolated, { reportInput: true });
  if (!result.success) {
    // A value whose variable is unset is reported once, as ENV_MISSING, not again for its shape.
    const unset = new Set(errors.filter((e) => e.code === 'ENV_MISSING').map((e) => String(e.params.path)));
    const issues = result.error.issues.filter((i) => !unset.has(formatKeyPath(i.path as (string | number)[])));
    errors.push(...issuesToConfigErrors(issues, src.locate, 'CONFIG_INVALID', ConfigSchema));
  } else errors.push(...crossCheck(result.data, src.locate));
  if (errors.length > 0) throw aggregate(errors);
  const data = result.data!;
  return deepFreeze({ ...data, file: abs, baseDir: path.dirname(abs), cwd });
}

/** One error, or all of them in file order as one error whose message has a line each. */
function aggregate(errors: ConfigError[]): ConfigError {
  const pos = (e: ConfigError) => {
    const m = /:(\d+):(\d+)/.exec(String(e.params.location ?? ''));
    return m ? Number(m[1]) * 1e6 + Number(m[2]) : 0;
  };
  const seen = new Set<string>();
  const sorted = errors.filter((e) => (seen.has(e.message) ? false : (seen.add(e.message), true))).sort((a, b) => pos(a) - pos(b));
  return combineErrors(sorted, (first) => new ConfigError('CONFIG_INVALID', first.params as Record<string, unknown>));
}

/** Rules that span sections: a `local` instance needs a `local:` section with instances, and its token if given must be theirs. */
function crossCheck(data: ConfigData, locate: (p: KeyPath) => string): ConfigError[] {
  const out: ConfigError[] = [];
  if (data.executor.driver === 'bullmq' && data.store.driver !== 'redis') {
    // Workers on other machines read the runs and record item results through the store: a file or memory store is this machine's only.
    const p = ['executor', 'driver'];
    const reason = `executor driver 'bullmq' needs store: { driver: redis } (the store is '${data.store.driver}'): workers on other machines share runs and results through it`;
    out.push(new ConfigError('CONFIG_INVALID', { location: locate(p), path: formatKeyPath(p), reason }));
  }
  out.push(...poolInstances(data, locate));
  for (const [name, inst] of Object.entries(data.instances)) {
    if (inst.apiUrl !== 'local') continue;
    const locals = data.local?.instances ?? [];
    const p = ['instances', name, 'apiUrl'];
    if (locals.length === 0) {
      out.push(
        new ConfigError('CONFIG_INVALID', {
          location: locate(p),
          path: formatKeyPath(p),
          reason: "apiUrl is 'local' but the local: section declares no instances",
        }),
      );
    } else if (inst.idInstance !== undefined && !locals.some((l) => l.idInstance === inst.idInstance)) {
      const q = ['instances', name, 'idInstance'];
      out.push(
        new ConfigError('CONFIG_INVALID', { location: locate(q), path: formatKeyPath(q), reason: 'no local instance has this idInstance' }),
      );
    } else {
      out.push(...tokenMismatch(data, name, locate));
    }
  }
  return out;
}

/** Each pool's instances are instances of this file. */
function poolInstances(data: ConfigData, locate: (p: KeyPath) => string): ConfigError[] {
  const known = Object.keys(data.instances);
  return Object.entries(data.pools).flatMap(([pool, p]) =>
    p.instances.flatMap((name, i) => {
      if (known.includes(name)) return [];
      const at = ['pools', pool, 'instances', i];
      const reason = `unknown instance '${name}'${didYouMean(name, known)}: instances declares ${known.length > 0 ? known.join(', ') : '(none)'}`;
      return [new ConfigError('CONFIG_INVALID', { location: locate(at), path: formatKeyPath(at), reason })];
    }),
  );
}

/** The local instance an `apiUrl: local` entry of config.yaml means: the one with its idInstance, or the first one. */
export function localInstanceOf(data: Pick<ConfigData, 'local'>, inst: ConfigData['instances'][string]) {
  const locals = data.local?.instances ?? [];
  return inst.idInstance ? locals.find((l) => l.idInstance === inst.idInstance) : locals[0];
}

/**
 * Both tokens of an `apiUrl: local` instance are in this file: one that
 * differs from its local instance's would have every call refused with 401.
 * Named by position, never by value (nor by the instance id).
 */
function tokenMismatch(data: ConfigData, name: string, locate: (p: KeyPath) => string): ConfigError[] {
  const inst = data.instances[name]!;
  const target = localInstanceOf(data, inst);
  if (inst.apiTokenInstance === undefined || !target || target.apiTokenInstance === inst.apiTokenInstance) return [];
  const p = ['instances', name, 'apiTokenInstance'];
  const q = ['local', 'instances', (data.local?.instances ?? []).indexOf(target), 'apiTokenInstance'];
  const reason = `differs from ${formatKeyPath(q)} (${locate(q)}), the local instance it calls: every call would be refused (401); leave it out to use that one, or make them the same`;
  return [new ConfigError('CONFIG_INVALID', { location: locate(p), path: formatKeyPath(p), reason })];
}

/** Reads and validates a config file. */
export function loadConfig(file = 'config.yaml', options: LoadConfigOptions = {}): Config {
  const abs = path.resolve(options.cwd ?? process.cwd(), file);
  if (!existsSync(abs)) throw new ConfigError('CONFIG_NOT_FOUND', { file });
  return parseConfig(readFileSync(abs, 'utf8'), abs, options);
}

/** Resolves a path from the config against the config file's directory. */
export function resolveFromConfig(config: Pick<Config, 'baseDir'>, p: string): string {
  return path.isAbsolute(p) ? p : path.resolve(config.baseDir, p);
}
