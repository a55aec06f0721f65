/**
 * A run's inputs: `--input key=value` from the command line, else the
 * declared data file, inline value or default.
 */
import { constants } from 'node:fs';
import { access, realpath } from 'node:fs/promises';
import path from 'node:path';
import { FlowError, MsgflowError } from '../../api/errors.js';
import { readDataFile, streamRecords } from './data-file.js';
import type { Flow, FlowInputDef } from './types.js';
import { didYouMean } from '../registry/suggest.js';
import { RESERVED_KEYS } from '../../util/config-issues.js';
import { nestedDeeperThan, tooDeepReason } from '../../util/http-body.js';

/** A `--input` the command line got wrong (unknown name, value of the wrong type): exit code 2. */
function inputArgError(flow: Flow, name: string, reason: string, cause?: unknown): MsgflowError {
  return new MsgflowError('INPUT_ARG_INVALID', { location: flow.displayFile, input: name, reason }, cause === undefined ? {} : { cause });
}

function inputError(flow: Flow, name: string, reason: string, cause?: unknown): FlowError {
  return new FlowError(
    'FLOW_INVALID',
    { location: flow.displayFile, path: `inputs.${name}`, reason },
    cause === undefined ? {} : { cause },
  );
}

/**
 * Whether `value` holds a number JSON cannot keep (Infinity from `1e999`,
 * NaN): stored, it would silently become `null`. Iterative, over a value
 * already known to be at most MAX_JSON_DEPTH deep.
 */
export function holdsNonFinite(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number' && !Number.isFinite(v)) return true;
    if (v !== null && typeof v === 'object') stack.push(...(Array.isArray(v) ? v : Object.values(v)));
  }
  return false;
}

/** Why an array or object input cannot be stored as it is, or undefined. */
function unstorable(v: unknown): string | undefined {
  if (nestedDeeperThan(v)) return tooDeepReason();
  if (holdsNonFinite(v)) return 'holds a number too large to store (e.g. 1e999): JSON would keep it as null';
  return undefined;
}

/**
 * Turns a command-line string into the input's declared type.
 *
 * @example coerceInput('42', 'number') // 42
 */
export function coerceInput(raw: string, type: FlowInputDef['type']): unknown {
  switch (type) {
    case 'number': {
      const n = Number(raw);
      if (raw.trim() === '' || Number.isNaN(n)) throw new Error(`'${raw}' is not a number`);
      if (!Number.isFinite(n)) throw new Error(`'${raw}' is too large to store as a number (JSON would keep it as null)`);
      return n;
    }
    case 'boolean': {
      const v = raw.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(v)) return true;
      if (['false', '0', 'no', 'off'].includes(v)) return false;
      throw new Error(`'${raw}' is not a boolean (use true or false)`);
    }
    case 'array':
    case 'object': {
      let v: unknown;
      try {
        v = JSON.parse(raw);
      } catch {
        // A comma-separated list is the friendly way to give an array on a command line.
        if (type === 'array')
          return raw
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s !== '');
        throw new Error(`'${raw}' is not a JSON object`);
      }
      if (type === 'array' && !Array.isArray(v)) throw new Error(`'${raw}' is not a JSON array`);
      if (type === 'object' && (v === null || typeof v !== 'object' || Array.isArray(v))) throw new Error(`'${raw}' is not a JSON object`);
      const why = unstorable(v);
      if (why) throw new Error(`the JSON value ${why}`);
      return v;
    }
    default:
      return raw;
  }
}

/** INPUT_ARG_INVALID (a usage error) for an override the flow does not declare, with a did-you-mean. */
export function checkInputNames(flow: Flow, overrides: Record<string, string>): void {
  const names = Object.keys(flow.inputs);
  for (const key of Object.keys(overrides)) {
    if (RESERVED_KEYS.has(key)) throw inputArgError(flow, key, `'${key}' cannot be an input name: it names JavaScript object internals`);
    if (!Object.hasOwn(flow.inputs, key)) {
      const list = names.length ? `it declares ${names.join(', ')}` : 'it declares no inputs';
      throw inputArgError(flow, key, `flow '${flow.name}' has no input '${key}'${didYouMean(key, names)}: ${list}`);
    }
  }
}

/**
 * The overrides of inputs declared with `file:` (paths to other data files),
 * made absolute against `cwd`: the command line's working directory, where
 * the user's relative path means something.
 */
export function fileOverridesFrom(flow: Flow, overrides: Record<string, string>, cwd: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, raw] of Object.entries(overrides)) {
    if (flow.inputs[name]?.file !== undefined) out[name] = path.resolve(cwd, raw);
  }
  return out;
}

/** The folder of the project every flow's data files may come from. */
export const DATA_DIR = 'data';

/**
 * The data folders of an input declared with `file:`: the project's `data/`
 * folder, and the folder of the declared file when that is a folder inside
 * the project other than the project itself (`data/leads.csv` → `data/`,
 * `lists/leads.csv` → `lists/`, `leads.csv` → only `data/`). Absolute paths.
 */
export function dataFolders(flow: Flow, name: string): string[] {
  const folders = [path.resolve(flow.baseDir, DATA_DIR)];
  const declared = flow.inputs[name]?.file;
  if (declared !== undefined) {
    const dir = path.dirname(path.resolve(flow.baseDir, declared));
    const rel = path.relative(flow.baseDir, dir);
    if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel) && !folders.includes(dir)) folders.push(dir);
  }
  return folders;
}

/** The real path (symlinks followed) of `p`, or `p` itself when it does not exist (yet). */
async function real(p: string): Promise<string> {
  return realpath(p).catch(() => p);
}

/**
 * Whether `file` may feed the input `name` of a run started over the API, and
 * be previewed by the dashboard: the input's declared file itself, or a file
 * inside one of its data folders (see dataFolders), symlinks followed, so a
 * link in `data/` to `config.yaml` is outside.
 */
export async function inDataFolders(flow: Flow, name: string, file: string): Promise<boolean> {
  const target = await real(path.resolve(file));
  const declared = flow.inputs[name]?.file;
  if (declared !== undefined && target === (await real(path.resolve(flow.baseDir, declared)))) return true;
  for (const folder of dataFolders(flow, name)) {
    const rel = path.relative(await real(folder), target);
    if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)) return true;
  }
  return false;
}

/**
 * For a run about to start: each input read from a data file, with whether
 * that file is in the input's data folders (its preview may be shown);
 * undefined when the flow reads no data file.
 */
export async function dataInputsOf(flow: Flow, overrides: Record<string, string>): Promise<Record<string, boolean> | undefined> {
  const out: Record<string, boolean> = {};
  for (const [name, def] of Object.entries(flow.inputs)) {
    if (def.file === undefined) continue;
    const file = Object.hasOwn(overrides, name) ? path.resolve(overrides[name]!) : path.resolve(flow.baseDir, def.file);
    out[name] = await inDataFolders(flow, name, file);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * Resolves every declared input. An override of an input declared with
 * `file:` is a path to another data file (relative to the working directory).
 * Unknown override names and missing required inputs are errors naming the
 * input.
 */
export async function resolveInputs(flow: Flow, overrides: Record<string, string> = {}): Promise<Record<string, unknown>> {
  checkInputNames(flow, overrides);
  const out: Record<string, unknown> = {};
  for (const [name, def] of Object.entries(flow.inputs)) {
    let value: unknown;
    if (Object.hasOwn(overrides, name)) {
      const raw = overrides[name]!;
      if (def.file !== undefined) value = await readFile(flow, name, path.resolve(raw), def);
      else {
        try {
          value = coerceInput(raw, def.type);
        } catch (e) {
          throw inputArgError(flow, name, `--input ${name}=${raw}: ${(e as Error).message}`, e);
        }
      }
    } else if (def.file !== undefined) value = await readFile(flow, name, path.resolve(flow.baseDir, def.file), def);
    else if (def.value !== undefined) value = def.value;
    else if (def.default !== undefined) value = def.default;
    if (value === undefined && def.required) {
      throw inputError(flow, name, `required input '${name}' has no value: pass --input ${name}=...`);
    }
    out[name] = value;
  }
  return out;
}

/** Rows a data input may hold unless it says `maxRows`: the whole input lives in memory for the run. */
export const DEFAULT_MAX_ROWS = 100_000;

class TooManyRows extends Error {}

function tooLarge(flow: Flow, name: string, file: string, max: number, cause?: unknown): MsgflowError {
  return new MsgflowError(
    'INPUT_TOO_LARGE',
    {
      location: flow.displayFile,
      input: name,
      reason:
        `${path.relative(flow.baseDir, file) || file} has more than ${max} rows, the most a flow input may hold (inputs.${name}.maxRows). ` +
        `A flow input is held in memory: for a bigger list, give the file to the job's own file: ` +
        `(checkAccount.bulk, contacts.import and files.broadcast read it row by row), or raise maxRows`,
    },
    cause === undefined ? {} : { cause },
  );
}

/**
 * CSV and JSON Lines are read as a stream and counted as they come, so a file
 * of 8 million rows stops at row max+1 instead of being loaded whole. JSON and
 * YAML documents cannot be streamed: their byte limit applies, then the count.
 */
async function readRows(file: string, max: number): Promise<unknown> {
  const ext = path.extname(file).toLowerCase();
  if (ext !== '.csv' && ext !== '.jsonl' && ext !== '.ndjson') {
    const v = await readDataFile(file);
    if (Array.isArray(v) && v.length > max) throw new TooManyRows();
    return v;
  }
  const rows: unknown[] = [];
  for await (const r of streamRecords(file)) {
    if (rows.length >= max) throw new TooManyRows();
    rows.push(r.value);
  }
  return rows;
}

/**
 * What a streamed input holds: its file's path as the project names it
 * (`data/leads.csv`; absolute when outside the project), for the job that
 * reads it row by row and names its rows by it.
 */
async function streamedPath(flow: Flow, file: string): Promise<string> {
  await access(file, constants.R_OK).catch((e: unknown) => {
    throw new MsgflowError('DATA_FILE_INVALID', { file, reason: 'data file not found' }, { cause: e });
  });
  const rel = path.relative(flow.baseDir, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel.split(path.sep).join('/') : file;
}

async function readFile(flow: Flow, name: string, file: string, def: FlowInputDef): Promise<unknown> {
  const maxRows = def.maxRows ?? DEFAULT_MAX_ROWS;
  try {
    if (def.stream) return await streamedPath(flow, file);
    return await readRows(file, maxRows);
  } catch (e) {
    if (e instanceof TooManyRows) throw tooLarge(flow, name, file, maxRows);
    // DATA_FILE_INVALID says `<file>: <what is wrong>`.
    const reason = e instanceof Error ? e.message : String(e);
    throw inputError(flow, name, reason, e);
  }
}

/** Whether `v` fits a declared input type (`any` and an undeclared type take anything). */
export function fitsInputType(v: unknown, type: FlowInputDef['type']): boolean {
  switch (type) {
    case 'string':
    case 'number':
    case 'boolean':
      return typeof v === type;
    case 'array':
      return Array.isArray(v);
    case 'object':
      return v !== null && typeof v === 'object' && !Array.isArray(v);
    default:
      return true;
  }
}

/**
 * A sub-flow's inputs: the values its caller's `with:` gave (already typed:
 * they are checked against the declared type, never coerced), the others
 * resolved as any run's are (file, value, default) by `rest`.
 */
export async function inputsFromValues(
  flow: Flow,
  values: Record<string, unknown>,
  rest: (flow: Flow) => Promise<Record<string, unknown>>,
): Promise<Record<string, unknown>> {
  const given: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(values)) {
    const def = Object.hasOwn(flow.inputs, name) ? flow.inputs[name] : undefined;
    const names = Object.keys(flow.inputs);
    if (!def) {
      const list = names.length ? `; inputs: ${names.join(', ')}` : '; the flow declares no inputs';
      throw new FlowError('SUBFLOW_INPUT_INVALID', { flow: flow.name, input: name, reason: `no such input${list}` });
    }
    if (v !== undefined && v !== null && !fitsInputType(v, def.type))
      throw new FlowError('SUBFLOW_INPUT_INVALID', { flow: flow.name, input: name, reason: `expected ${def.type}, got ${typeof v}` });
    const bad = unstorable(v);
    if (bad) throw new FlowError('SUBFLOW_INPUT_INVALID', { flow: flow.name, input: name, reason: bad });
    given[name] = v;
  }
  const others = Object.fromEntries(Object.entries(flow.inputs).filter(([n]) => !Object.hasOwn(given, n)));
  return { ...(await rest({ ...flow, inputs: others })), ...given };
}
