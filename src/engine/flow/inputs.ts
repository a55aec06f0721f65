/**
 * A run's inputs: `--input key=value` from the command line, else the
 * declared data file, inline value or default.
 */
import path from 'node:path';
import { FlowError, MsgflowError } from '../../api/errors.js';
import { readDataFile } from '../../util/data-file.js';
import type { Flow, FlowInputDef } from '../flow-types.js';
import { didYouMean } from '../registry/suggest.js';
import { displayPath } from './load.js';

function inputError(flow: Flow, name: string, reason: string, cause?: unknown): FlowError {
  return new FlowError('FLOW_INVALID', { location: displayPath(flow.file), path: `inputs.${name}`, reason }, cause === undefined ? {} : { cause });
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
        if (type === 'array') return raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
        throw new Error(`'${raw}' is not a JSON object`);
      }
      if (type === 'array' && !Array.isArray(v)) throw new Error(`'${raw}' is not a JSON array`);
      if (type === 'object' && (v === null || typeof v !== 'object' || Array.isArray(v))) throw new Error(`'${raw}' is not a JSON object`);
      return v;
    }
    default:
      return raw;
  }
}

/**
 * Resolves every declared input. An override of an input declared with
 * `file:` is a path to another data file (relative to the working directory).
 * Unknown override names and missing required inputs are errors naming the
 * input.
 */
export async function resolveInputs(flow: Flow, overrides: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const names = Object.keys(flow.inputs);
  for (const key of Object.keys(overrides)) {
    if (!Object.hasOwn(flow.inputs, key)) {
      const list = names.length ? `it declares ${names.join(', ')}` : 'it declares no inputs';
      throw inputError(flow, key, `flow '${flow.name}' has no input '${key}'${didYouMean(key, names)}: ${list}`);
    }
  }
  const out: Record<string, unknown> = {};
  for (const [name, def] of Object.entries(flow.inputs)) {
    let value: unknown;
    if (Object.hasOwn(overrides, name)) {
      const raw = overrides[name]!;
      if (def.file !== undefined) value = await readFile(flow, name, path.resolve(raw));
      else {
        try {
          value = coerceInput(raw, def.type);
        } catch (e) {
          throw inputError(flow, name, `--input ${name}=${raw}: ${(e as Error).message}`, e);
        }
      }
    } else if (def.file !== undefined) value = await readFile(flow, name, path.resolve(flow.baseDir, def.file));
    else if (def.value !== undefined) value = def.value;
    else if (def.default !== undefined) value = def.default;
    if (value === undefined && def.required) {
      throw inputError(flow, name, `required input '${name}' has no value: pass --input ${name}=...`);
    }
    out[name] = value;
  }
  return out;
}

async function readFile(flow: Flow, name: string, file: string): Promise<unknown> {
  try {
    return await readDataFile(file);
  } catch (e) {
    const reason = e instanceof MsgflowError ? String(e.params.reason ?? e.message) : (e as Error).message;
    throw inputError(flow, name, reason, e);
  }
}
