import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LoadConfigOptions } from '../../runtime/present.js';
import { loadConfig, renderFlowJsonSchema } from '../../runtime/frontend.js';
import { buildRegistry } from '../../runtime/registry.js';
import { parseCommand, parseLogLevel } from '../args.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { cliPath, configOptions, safeWrite, type Io } from '../output.js';

/**
 * The flow JSON Schema for this project: the flow file shape plus the input
 * schema of every action a flow here may use (built-ins, jobs, config.yaml's
 * plugins), so editors autocomplete `with:` blocks of your own actions too.
 */
export async function renderSchemaFor(configFile: string, options: LoadConfigOptions = {}): Promise<string> {
  const config = loadConfig(configFile, options);
  return renderFlowJsonSchema(await buildRegistry(config));
}

/** `msgflow schema [--out FILE] [--check]`: print, write, or check the flow JSON Schema. */
export async function schema(argv: string[], io: Io): Promise<number> {
  const { values } = parseCommand('schema', argv, false);
  parseLogLevel(values['log-level']);
  // --check compares with a file: without one there is nothing to check (it must not "pass").
  if (values.check && !values.out) throw new UsageError('--check needs --out FILE: the schema file to compare with');
  const text = await renderSchemaFor(values.config ?? 'config.yaml', configOptions(io));
  if (!values.out) {
    safeWrite(io.stdout, text);
    return EXIT.OK;
  }
  const out = cliPath(io, values.out);
  const same = existsSync(out) && readFileSync(out, 'utf8') === text;
  if (values.check) {
    io.out(same ? `${values.out} is up to date` : `${values.out} is out of date: run msgflow schema --out ${values.out}`);
    return same ? EXIT.OK : EXIT.FAILURE;
  }
  if (!same) {
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, text);
  }
  io.out(`${values.out} ${same ? 'unchanged' : 'written'}`);
  return EXIT.OK;
}
