import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, MsgflowError } from '../api/errors.js';
import { issuesToConfigErrors } from '../util/config-issues.js';
import { formatKeyPath, parseYamlSource, type KeyPath } from '../util/yaml-source.js';
import { interpolateEnv } from './interpolate.js';
import { ConfigSchema, type ConfigData } from './schema.js';
import { deepFreeze } from '../util/freeze.js';

/** A validated, frozen config plus where it came from. */
export interface Config extends ConfigData {
  /** Absolute path of the file, or `<inline>`. */
  readonly file: string;
  /** Directory relative paths in the config resolve against. */
  readonly baseDir: string;
}

export { issuesToConfigErrors };

export interface LoadConfigOptions {
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
}

/** Parses and validates config text. Throws a ConfigError (or an aggregate of them). */
export function parseConfig(text: string, file: string, options: LoadConfigOptions = {}): Config {
  const display = path.isAbsolute(file) ? path.relative(process.cwd(), file) || file : file;
  let src;
  try {
    src = parseYamlSource(text, display);
  } catch (e) {
    if (e instanceof MsgflowError) throw new ConfigError(e.code, e.params as Record<string, unknown>, { cause: e });
    throw e;
  }
  const raw = src.value ?? {};
  const interpolated = interpolateEnv(raw, options.env ?? process.env, (p) => src.locate(p));
  const result = ConfigSchema.safeParse(interpolated, { reportInput: true });
  if (!result.success) {
    const errors = issuesToConfigErrors(result.error.issues, src.locate);
    if (errors.length === 1) throw errors[0];
    const agg = new ConfigError('CONFIG_INVALID', errors[0]!.params as Record<string, unknown>);
    agg.message = errors.map((e) => e.message).join('\n');
    throw agg;
  }
  const data = result.data;
  const checkErr = crossCheck(data, src.locate);
  if (checkErr) throw checkErr;
  const abs = path.resolve(file);
  return deepFreeze({ ...data, file: abs, baseDir: path.dirname(abs) });
}

/** Rules that span sections: a `local` instance needs a `local:` section with instances. */
function crossCheck(data: ConfigData, locate: (p: KeyPath) => string): ConfigError | undefined {
  for (const [name, inst] of Object.entries(data.instances)) {
    if (inst.apiUrl !== 'local') continue;
    const locals = data.local?.instances ?? [];
    const p = ['instances', name, 'apiUrl'];
    if (locals.length === 0) {
      return new ConfigError('CONFIG_INVALID', { location: locate(p), path: formatKeyPath(p), reason: "apiUrl is 'local' but the local: section declares no instances" });
    }
    if (inst.idInstance !== undefined && !locals.some((l) => l.idInstance === inst.idInstance)) {
      const q = ['instances', name, 'idInstance'];
      return new ConfigError('CONFIG_INVALID', { location: locate(q), path: formatKeyPath(q), reason: 'no local instance has this idInstance' });
    }
  }
  return undefined;
}

/** Reads and validates a config file. */
export function loadConfig(file = 'config.yaml', options: LoadConfigOptions = {}): Config {
  const abs = path.resolve(file);
  if (!existsSync(abs)) throw new ConfigError('CONFIG_NOT_FOUND', { file });
  return parseConfig(readFileSync(abs, 'utf8'), abs, options);
}

/** Resolves a path from the config against the config file's directory. */
export function resolveFromConfig(config: Pick<Config, 'baseDir'>, p: string): string {
  return path.isAbsolute(p) ? p : path.resolve(config.baseDir, p);
}
