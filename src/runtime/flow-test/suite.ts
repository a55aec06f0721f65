/**
 * Flow tests: YAML cases next to the flows (`flows/*.test.yaml`) that run a
 * flow against the in-process local service on a virtual clock.
 *
 * @example
 * import { loadConfig, runFlowTests } from 'msgflow';
 * const { results } = await runFlowTests({ config: loadConfig('config.yaml') });
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, MsgflowError } from '../../api/errors.js';
import { resolveFromConfig, type Config } from '../../config/load.js';
import { issuesToConfigErrors } from '../../util/config-issues.js';
import { parseYamlSource } from '../../util/yaml-source.js';
import { displayPath } from '../../engine/flow/load.js';
import { registryFor, runFlowTestCase, type CaseResult } from './run.js';
import { FlowTestFileSchema, type FlowTestFile } from './schema.js';

/**
 * Parses and validates a test file; errors name file:line:col, the file shown relative to `cwd`.
 *
 * @param cwd working directory of the command. @default process.cwd()
 */
export function loadFlowTestFile(file: string, cwd: string = process.cwd()): FlowTestFile {
  const display = displayPath(file, cwd);
  if (!existsSync(file)) throw new MsgflowError('USAGE', { reason: `test file not found: ${display}` });
  const src = parseYamlSource(readFileSync(file, 'utf8'), display);
  const parsed = FlowTestFileSchema.safeParse(src.value);
  if (!parsed.success) {
    const errors = issuesToConfigErrors(parsed.error.issues, src.locate, 'FLOW_INVALID', FlowTestFileSchema);
    if (errors.length === 1) throw errors[0]!;
    throw new ConfigError('FLOW_INVALID', { location: src.locate([]), path: '(file)', reason: errors.map((e) => e.message).join('\n  ') });
  }
  return parsed.data;
}

/** `*.test.yaml` / `*.test.yml` files of the config's flowsDir, sorted. */
export function findFlowTestFiles(config: Config): string[] {
  const dir = resolveFromConfig(config, config.flowsDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => /\.test\.ya?ml$/i.test(f))
    .sort()
    .map((f) => path.join(dir, f));
}

export interface RunFlowTestsOptions {
  config: Config;
  /** Test files; @default every `*.test.yaml` of flowsDir */
  files?: string[];
  /** Only cases whose name contains this text. */
  filter?: string;
  /** Called after each case (the CLI prints as it goes). */
  onResult?(result: CaseResult): void;
}

export interface FlowTestSummary {
  results: CaseResult[];
  passed: number;
  failed: number;
}

/** Runs flow test files against the in-process local service on a virtual clock. */
export async function runFlowTests(opts: RunFlowTestsOptions): Promise<FlowTestSummary> {
  const { cwd } = opts.config;
  const files = (opts.files ?? findFlowTestFiles(opts.config)).map((f) => path.resolve(cwd, f));
  const parsed = files.map((f) => [f, loadFlowTestFile(f, cwd)] as const);
  const registry = await registryFor(opts.config);
  const results: CaseResult[] = [];
  for (const [file, test] of parsed) {
    for (const c of test.cases) {
      if (opts.filter && !c.name.includes(opts.filter)) continue;
      const r = await runFlowTestCase(opts.config, registry, file, c);
      results.push(r);
      opts.onResult?.(r);
    }
  }
  const passed = results.filter((r) => r.passed).length;
  return { results, passed, failed: results.length - passed };
}
