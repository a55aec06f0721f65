/**
 * Flow tests: YAML cases next to the flows (`flows/*.test.yaml`) that run a
 * flow against the in-process local service on a virtual clock.
 *
 * @example
 * import { loadConfig, runFlowTests } from 'msgflow';
 * const { results } = await runFlowTests({ config: loadConfig('config.yaml') });
 */
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, MsgflowError } from '../../api/errors.js';
import { resolveFromConfig, type Config } from '../../config/load.js';
import { issuesToConfigErrors } from '../../util/config-issues.js';
import { parseYamlSource, type YamlSource } from '../../util/yaml-source.js';
import { displayPath, listFlowTestFiles } from '../../engine/flow/load.js';
import { registryFor, runFlowTestCase, type CaseResult } from './run.js';
import { FlowTestFileSchema, type FlowTestFile } from './schema.js';

/** A test file read and checked: its cases, or every problem with file:line:col. */
export interface ParsedFlowTestFile {
  /** The cases, when the file is valid. */
  data?: FlowTestFile;
  /** Every problem; empty when valid. */
  errors: MsgflowError[];
  /** The file's YAML with positions, when it parsed. */
  src?: YamlSource;
}

/**
 * Reads a test file and checks it against the format, collecting every
 * problem (`msgflow validate` lists them; {@link loadFlowTestFile} throws them).
 *
 * @param cwd working directory of the command: file names are shown relative to it. @default process.cwd()
 */
export function parseFlowTestFile(file: string, cwd: string = process.cwd()): ParsedFlowTestFile {
  const display = displayPath(file, cwd);
  if (!existsSync(file)) return { errors: [new MsgflowError('USAGE', { reason: `test file not found: ${display}` })] };
  let src: YamlSource;
  try {
    src = parseYamlSource(readFileSync(file, 'utf8'), display);
  } catch (e) {
    if (e instanceof MsgflowError) return { errors: [e] };
    throw e;
  }
  const parsed = FlowTestFileSchema.safeParse(src.value);
  if (parsed.success) return { data: parsed.data, errors: [], src };
  return { errors: issuesToConfigErrors(parsed.error.issues, src.locate, 'FLOW_INVALID', FlowTestFileSchema), src };
}

/**
 * Parses and validates a test file; errors name file:line:col, the file shown relative to `cwd`.
 *
 * @param cwd working directory of the command. @default process.cwd()
 */
export function loadFlowTestFile(file: string, cwd: string = process.cwd()): FlowTestFile {
  const r = parseFlowTestFile(file, cwd);
  if (r.data) return r.data;
  if (r.errors.length === 1 || !r.src) throw r.errors[0]!;
  throw new ConfigError('FLOW_INVALID', {
    location: r.src.locate([]),
    path: '(file)',
    reason: r.errors.map((e) => e.message).join('\n  '),
  });
}

/** `*.test.yaml` / `*.test.yml` files of the config's flowsDir, sorted. */
export function findFlowTestFiles(config: Config): string[] {
  return listFlowTestFiles(resolveFromConfig(config, config.flowsDir));
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
