/**
 * What `msgflow validate` checks of a flow test file: its format, and that
 * each case names a flow the project has (`msgflow test` would only find out
 * when the case runs).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, type MsgflowError } from '../../api/errors.js';
import { displayPath, loadFlows, type LoadFlowOptions } from '../../engine/flow/load.js';
import { FlowFileError } from '../../engine/flow/errors.js';
import { didYouMean } from '../../util/suggest.js';
import { formatKeyPath } from '../../util/yaml-source.js';
import { parseFlowTestFile } from './suite.js';

export interface FlowTestValidation {
  /** The file as messages show it. */
  file: string;
  /** Empty when the file is valid. */
  errors: MsgflowError[];
}

/**
 * Checks flow test files. A case's `flow:` must be a flow name or file name
 * (without extension) of `flowsDir`, as `msgflow test` looks it up, or a path
 * to a flow file.
 */
export function validateFlowTestFiles(files: readonly string[], flowsDir: string, opts: LoadFlowOptions): FlowTestValidation[] {
  const cwd = opts.cwd ?? process.cwd();
  let known: Set<string> | undefined;
  return files.map((f) => {
    const abs = path.resolve(cwd, f);
    const parsed = parseFlowTestFile(abs, cwd);
    const errors = [...parsed.errors];
    if (parsed.data && parsed.src) {
      known ??= flowNames(flowsDir, opts);
      for (const [i, c] of parsed.data.cases.entries()) {
        // The case's flow, and its other flows (`flows:`), each looked up as msgflow test does.
        const named: Array<[string, (string | number)[]]> = [
          [c.flow, ['cases', i, 'flow']],
          ...(c.flows ?? []).map((f, j): [string, (string | number)[]] => [f, ['cases', i, 'flows', j]]),
        ];
        for (const [name, at] of named) {
          if (known.has(name) || (/\.ya?ml$/i.test(name) && existsSync(path.resolve(cwd, name)))) continue;
          const dir = displayPath(path.resolve(cwd, flowsDir), cwd);
          const reason = `no flow named '${name}' in ${dir}${didYouMean(name, known)}`;
          errors.push(
            new ConfigError('FLOW_INVALID', {
              location: parsed.src.locate(at),
              path: formatKeyPath(at),
              reason,
            }),
          );
        }
      }
    }
    return { file: displayPath(abs, cwd), errors };
  });
}

/** Every name a case may use for a flow of `dir`: `name:` and file stem, of broken files too (they report themselves). */
function flowNames(dir: string, opts: LoadFlowOptions): Set<string> {
  const { flows, errors } = loadFlows(dir, opts);
  const names = new Set<string>();
  for (const f of flows) names.add(f.name).add(path.basename(f.file, path.extname(f.file)));
  for (const e of errors) {
    if (!(e instanceof FlowFileError)) continue;
    if (e.flowName) names.add(e.flowName);
    names.add(path.basename(e.file, path.extname(e.file)));
  }
  return names;
}
