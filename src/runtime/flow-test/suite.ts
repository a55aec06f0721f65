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
import { displayPath, listFlowTestFiles, validationTargets } from '../../engine/flow/load.js';
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
  /**
   * What to test, as a user names it: test files (`*.test.yaml`), flow files
   * (the cases of flowsDir's tests that name the flow, as `flow:` or in `flows:`) or directories (their
   * test files), so `msgflow test flows/*.yaml` runs each test once.
   * @default every `*.test.yaml` of flowsDir
   */
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
  /** Flow files named in `files` that no case of flowsDir's tests runs, as named. */
  untested: string[];
}

/** The test files to read, and which flows' cases to run from those not named themselves. */
function testTargets(config: Config, files: readonly string[] | undefined) {
  if (!files) return { tests: findFlowTestFiles(config), named: undefined, flows: new Map<string, string>() };
  const t = validationTargets(files.map((f) => path.resolve(config.cwd, f)));
  // A flow file stands for the cases that name its flow: by the flow's name, as a case's `flow:` does.
  const flows = new Map<string, string>();
  for (const f of t.flows) flows.set(flowNameOf(f) ?? path.basename(f).replace(/\.ya?ml$/i, ''), f);
  const named = new Set(t.tests);
  const tests = [...new Set([...t.tests, ...(flows.size > 0 ? findFlowTestFiles(config) : [])])];
  return { tests, named, flows };
}

/** The `name:` of a flow file, if it reads as YAML with one (a broken flow is reported when its case runs). */
function flowNameOf(file: string): string | undefined {
  try {
    const v = parseYamlSource(readFileSync(file, 'utf8'), file).value as { name?: unknown } | null;
    return typeof v?.name === 'string' ? v.name : undefined;
  } catch {
    return undefined;
  }
}

/** Runs flow test files against the in-process local service on a virtual clock. */
export async function runFlowTests(opts: RunFlowTestsOptions): Promise<FlowTestSummary> {
  const { cwd } = opts.config;
  const { tests, named, flows } = testTargets(opts.config, opts.files);
  const parsed = tests.map((f) => [f, loadFlowTestFile(f, cwd)] as const);
  const registry = await registryFor(opts.config);
  const results: CaseResult[] = [];
  const tested = new Set<string>();
  for (const [file, test] of parsed) {
    for (const c of test.cases) {
      // A flow file stands for the cases that run its flow: as theirs, or as one of their `flows:`.
      const runs = [c.flow, ...(c.flows ?? [])];
      if (named && !named.has(file) && !runs.some((f) => flows.has(f))) continue;
      for (const f of runs) tested.add(f);
      if (opts.filter && !c.name.includes(opts.filter)) continue;
      const r = await runFlowTestCase(opts.config, registry, file, c);
      results.push(r);
      opts.onResult?.(r);
    }
  }
  const passed = results.filter((r) => r.passed).length;
  const untested = [...flows].filter(([name]) => !tested.has(name)).map(([, file]) => displayPath(file, cwd));
  return { results, passed, failed: results.length - passed, untested };
}
