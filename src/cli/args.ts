import { parseArgs, type ParseArgsConfig } from 'node:util';
import { closest } from '../runtime/present.js';
import { optionsOf } from './help.js';
import { UsageError } from './exit-codes.js';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

export interface Parsed {
  values: Record<string, string | boolean | string[] | boolean[] | undefined> & Record<string, any>;
  positionals: string[];
}

/** node:util parseArgs with our usage errors (exit 2) instead of its TypeErrors. */
export function parse<O extends OptionSpec>(
  argv: string[],
  options: O,
  allowPositionals = true,
): ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: boolean; strict: true }>> {
  try {
    return parseArgs({ args: argv, options, allowPositionals, strict: true });
  } catch (e) {
    const msg = (e as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    throw new UsageError(msg);
  }
}

export function parsePort(value: string | undefined, flag = '--port'): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) throw new UsageError(`${flag} expects a port number 0-65535, got '${value}'`);
  return Number(value);
}

export function parsePositiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1) throw new UsageError(`${flag} expects a positive integer, got '${value}'`);
  return Number(value);
}

/** `--input key=value` pairs into a record; a pair without `=` is a usage error. */
export function parseInputs(pairs: string[] | undefined): Record<string, string> {
  // No prototype: `-i __proto__=x` is a key like any other (refused by name), not a silent no-op.
  const out = Object.create(null) as Record<string, string>;
  for (const pair of pairs ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--input expects key=value, got '${pair}'`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type CliLogLevel = (typeof LOG_LEVELS)[number];

/**
 * The log level of a command: `--log-level`, else config.yaml's `logLevel`,
 * else info. A bad value is a usage error (exit 2).
 */
export function parseLogLevel(flag: string | undefined, configLevel?: CliLogLevel): CliLogLevel {
  if (flag === undefined) return configLevel ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(flag))
    throw new UsageError(`--log-level expects one of ${LOG_LEVELS.join(', ')}, got '${flag}'`);
  return flag as CliLogLevel;
}

/**
 * Parses a command's argv with the options of its help table (help.ts), so
 * every accepted flag is one listed by `msgflow help COMMAND`. String options
 * read as strings, booleans as booleans, repeatable ones as arrays.
 */
export function parseCommand(command: string, argv: string[], allowPositionals = true): Parsed {
  return parse(argv, optionsOf(command), allowPositionals) as Parsed;
}

/** The subcommands of `msgflow NAME [SUB ARG]` (runs, sessions, pauses, handovers) and what their argument is. */
export interface SubcommandRule {
  /** The subcommands, in the order an error lists them. */
  subs: readonly string[];
  /** A subcommand's argument, as the error for a missing one names it: `a CHAT (a chat ID or a phone number)`. */
  arg: string;
  /** Subcommands that take no argument: what the argument would be and what chooses instead, for the error. */
  noArg?: Readonly<Record<string, { what: string; why: string }>>;
}

/**
 * The subcommand and argument of `msgflow NAME [SUB ARG]`, from its
 * positionals. Usage errors name an unknown subcommand (with the closest
 * one), a missing argument, an argument a subcommand does not take, and any
 * argument after them.
 */
export function subcommandOf(command: string, positionals: readonly string[], rule: SubcommandRule): { sub?: string; arg?: string } {
  const [sub, arg, ...extra] = positionals;
  if (sub !== undefined && !rule.subs.includes(sub)) {
    const hint = closest(sub, rule.subs);
    const expected = rule.subs.length === 1 ? rule.subs[0] : `${rule.subs.slice(0, -1).join(', ')} or ${rule.subs.at(-1)}`;
    throw new UsageError(`unknown ${command} subcommand '${sub}' (${hint ? `did you mean '${hint}'?; ` : ''}expected ${expected})`);
  }
  const noArg = sub === undefined ? undefined : rule.noArg?.[sub];
  if (noArg && arg !== undefined) throw new UsageError(`${command} ${sub} takes no ${noArg.what} (got '${arg}'): ${noArg.why}`);
  if (sub !== undefined && !noArg && arg === undefined) throw new UsageError(`${command} ${sub} expects ${rule.arg}`);
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  return { ...(sub === undefined ? {} : { sub }), ...(arg === undefined ? {} : { arg }) };
}
