/**
 * Loading flow files: YAML with positions -> shape check (zod) -> semantic
 * checks -> a frozen {@link Flow}. Every problem of a file is collected and
 * thrown as one FlowFileError.
 */
import { shortHash } from '../../util/short-hash.js';
import { hasTemplate, locatedTemplate, type CompiledTemplate } from '../expr/template.js';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { FlowError, MsgflowError } from '../../api/errors.js';
import { deepFreeze } from '../../util/freeze.js';
import { parseYamlSource, type YamlSource } from '../../util/yaml-source.js';
import type { Flow, FlowStep } from './types.js';
import { DIALOG_ACTION, DIALOG_STEP_ID } from '../conversation/check.js';
import { closest } from '../registry/suggest.js';
import { checkFlow, reportSchemaIssues, type CheckOptions } from './check.js';
import { FlowFileError, FlowIssue } from './errors.js';
import { unusableFilePaths } from './input-files.js';
import { Reporter } from './reporter.js';
import { subflowIssues } from './subflows.js';
import { FlowFileSchema, type FlowFileData } from './schema.js';

export interface LoadFlowOptions extends CheckOptions {
  /** Project directory: relative input files resolve against it (the config file's directory). */
  baseDir: string;
  /**
   * Working directory: a relative flow path given by name resolves against it, and messages show
   * file names relative to it (the CLI passes its injected cwd). @default process.cwd()
   */
  cwd?: string;
  /** @default 1048576 (1 MiB) */
  maxBytes?: number;
  /** @default 100 */
  maxAliasCount?: number;
}

const FLOW_EXTENSIONS = ['.yaml', '.yml'];

/** The file as shown in messages: relative to the working directory when under it. */
export function displayPath(file: string, cwd: string = process.cwd()): string {
  const rel = path.relative(cwd, file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}

function fileIssue(display: string, reason: string, cause?: unknown, line = 1, col = 1): FlowFileError {
  return new FlowFileError(display, [new FlowIssue({ file: display, line, col, keyPath: '(root)' }, reason, { cause })]);
}

/**
 * Reads, validates and converts one flow file.
 *
 * @throws FlowFileError (a FlowError) listing every problem, one per line:
 *   `flows/x.yaml:12:14 steps[1].with.chatID: unknown key 'chatID' ...`
 */
export function loadFlowFile(file: string, opts: LoadFlowOptions): Flow {
  const abs = path.resolve(opts.cwd ?? process.cwd(), file);
  const display = displayPath(abs, opts.cwd);
  const maxBytes = opts.maxBytes ?? 1024 * 1024;
  let size: number;
  try {
    size = statSync(abs).size;
  } catch (e) {
    throw fileIssue(display, 'file not found', e);
  }
  // Checked before reading: a huge file is refused without loading it.
  if (size > maxBytes) throw fileIssue(display, `file is ${size} bytes, more than the ${maxBytes} bytes a flow file may have`);
  const text = readFileSync(abs, 'utf8');
  let src: YamlSource;
  try {
    src = parseYamlSource(text, display, { maxBytes, maxAliasCount: opts.maxAliasCount });
  } catch (e) {
    if (!(e instanceof MsgflowError)) throw e;
    if (e.code === 'YAML_TOO_MANY_ALIASES') throw fileIssue(display, 'too many YAML alias expansions (an alias bomb?): refused', e);
    if (e.code === 'YAML_SYNTAX') {
      const m = /:(\d+):(\d+)$/.exec(String(e.params.location));
      throw fileIssue(display, `YAML syntax error: ${e.params.reason}`, e, Number(m?.[1] ?? 1), Number(m?.[2] ?? 1));
    }
    throw fileIssue(display, e.message, e);
  }
  const raw = src.value;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw fileIssue(display, 'a flow file must be a mapping with at least name and steps');
  }
  const rawObj = raw as Record<string, unknown>;
  const rep = new Reporter(src, text, raw);
  const parsed = FlowFileSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) reportSchemaIssues(rep, parsed.error.issues);
  const { env, secrets } = checkFlow(rep, rawObj, opts);
  const flowName = typeof rawObj.name === 'string' ? rawObj.name : undefined;
  if (rep.issues.length > 0 || !parsed.success) throw new FlowFileError(display, sortIssues(rep.issues), flowName);
  return deepFreeze({
    ...toFlow(parsed.data, rawConversation(rawObj), env, src, { file: abs, displayFile: display, baseDir: opts.baseDir }),
    // The hash a run records of its flow: taken of the text loaded, so a run's start reads no file.
    sourceHash: shortHash(text),
    secrets,
  });
}

function sortIssues(issues: FlowIssue[]): FlowIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => (seen.has(i.message) ? false : (seen.add(i.message), true))).sort((a, b) => a.line - b.line || a.col - b.col);
}

/** The conversation block as written: its templates are compiled from it with their positions. */
function rawConversation(raw: Record<string, unknown>): unknown {
  return raw.conversation;
}

/**
 * A conversation's own step, first in the flow: the `dialog` action with the
 * block as validated (durations in ms, templates as text), its templates
 * compiled with their positions (the action renders them per message,
 * against the session).
 */
function dialogStep(src: YamlSource, conversation: FlowFileData['conversation'], raw: unknown): FlowStep {
  const table = new Map<string, CompiledTemplate>();
  collectTemplates(src, ['conversation'], raw, table);
  return {
    id: DIALOG_STEP_ID,
    uses: DIALOG_ACTION,
    concurrency: 1,
    with: { conversation },
    retry: { maxAttempts: 1, backoff: 'exponential', jitter: true, delayMs: 1000, maxDelayMs: 600_000 },
    continueOnError: false,
    executor: conversation!.executor,
    location: src.locate(['conversation']),
    templates: table,
  };
}

/** Compiles every template inside `value` (at `at` in the file) into `table`; the same text twice keeps the first position. */
function collectTemplates(
  src: YamlSource,
  at: (string | number)[],
  value: unknown,
  table: Map<string, CompiledTemplate>,
  bare = false,
): void {
  if (typeof value === 'string') {
    if (table.has(value) || !(hasTemplate(value) || (bare && value.trim() !== ''))) return;
    try {
      table.set(value, locatedTemplate(value, src.locate(at), bare));
    } catch {
      // Not a valid expression: checkFlow has refused the file already.
    }
  } else if (Array.isArray(value)) value.forEach((v, k) => collectTemplates(src, [...at, k], v, table));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) collectTemplates(src, [...at, k], v, table);
}

/**
 * A step's templates (its `if:`, `forEach:` and `with:`), each compiled with
 * its flow position, so that an evaluation error (EXPRESSION_ERROR,
 * EXPRESSION_LIMIT) names where it is written. The same text twice in a step
 * keeps the first position.
 */
function stepTemplates(
  src: YamlSource,
  at: (string | number)[],
  step: Pick<FlowFileData['steps'][number], 'if' | 'forEach' | 'with'>,
): Map<string, CompiledTemplate> {
  const table = new Map<string, CompiledTemplate>();
  collectTemplates(src, [...at, 'if'], step.if, table, true);
  collectTemplates(src, [...at, 'forEach'], step.forEach, table);
  collectTemplates(src, [...at, 'with'], step.with, table);
  return table;
}

/** A step of the model, with its position and templates, and its `on-failure:` steps' (at `on-failure[j]` under it). */
function located(src: YamlSource, at: (string | number)[], s: FlowFileData['steps'][number]): FlowStep {
  const { onFailure, ...step } = s;
  return {
    ...step,
    location: src.locate(at),
    templates: stepTemplates(src, at, step),
    ...(onFailure ? { onFailure: onFailure.map((h, j) => located(src, [...at, 'on-failure', j], h)) } : {}),
  };
}

function toFlow(
  d: FlowFileData,
  rawConversation: unknown,
  env: Record<string, string>,
  src: YamlSource,
  where: Pick<Flow, 'file' | 'displayFile' | 'baseDir'>,
): Flow {
  const { $schema: _schema, env: _env, steps, on, ...rest } = d;
  return {
    ...rest,
    // A notification trigger listens to the flow's own instance unless it names another.
    on: on.notification
      ? { ...on, notification: { ...on.notification, instance: on.notification.instance ?? d.instance } }
      : { ...on, notification: undefined },
    env,
    steps: [
      ...(d.conversation ? [dialogStep(src, d.conversation, rawConversation)] : []),
      ...steps.map((s, i) => located(src, ['steps', i], s)),
    ],
    file: where.file,
    displayFile: where.displayFile,
    baseDir: path.resolve(where.baseDir),
  };
}

/**
 * Whether a file is a flow test (`*.test.yaml` / `*.test.yml`, run by
 * `msgflow test`) rather than a flow: decided by its name, however the file
 * was named on the command line.
 */
export function isFlowTestFile(file: string): boolean {
  return /\.test\.ya?ml$/i.test(path.basename(file));
}

function listYamlFiles(dir: string, tests: boolean): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && FLOW_EXTENSIONS.includes(path.extname(e.name).toLowerCase()) && isFlowTestFile(e.name) === tests)
    .map((e) => path.join(dir, e.name))
    .sort();
}

/** The flow files of a directory (not recursive), sorted; its flow tests are not flows. */
export function listFlowFiles(dir: string): string[] {
  return listYamlFiles(dir, false);
}

/** The flow test files (`*.test.yaml`, `*.test.yml`) of a directory (not recursive), sorted. */
export function listFlowTestFiles(dir: string): string[] {
  return listYamlFiles(dir, true);
}

/**
 * What `msgflow validate FILE...` checks, sorted by kind: a directory gives
 * its flows and its flow tests, a file is a flow test when its name says so
 * ({@link isFlowTestFile}) — as a shell glob such as `flows/*.yaml` lists it.
 */
export function validationTargets(files: readonly string[]): { flows: string[]; tests: string[] } {
  const flows: string[] = [];
  const tests: string[] = [];
  for (const f of files) {
    if (existsSync(f) && statSync(f).isDirectory()) {
      flows.push(...listFlowFiles(f));
      tests.push(...listFlowTestFiles(f));
    } else (isFlowTestFile(f) ? tests : flows).push(f);
  }
  return { flows, tests };
}

export interface LoadedFlows {
  flows: Flow[];
  /** One per broken file (FlowFileError: `.errors` holds each problem). */
  errors: FlowError[];
}

/**
 * Loads every flow of a directory. Broken files do not stop the others:
 * their errors are returned. Two files with the same `name:` are an error
 * on the second.
 */
export function loadFlows(dir: string, opts: LoadFlowOptions): LoadedFlows {
  const flows: Flow[] = [];
  const errors: FlowError[] = [];
  const byName = new Map<string, Flow>();
  for (const file of listFlowFiles(dir)) {
    try {
      const flow = loadFlowFile(file, opts);
      const other = byName.get(flow.name);
      if (other) {
        errors.push(duplicateName(flow, other));
        continue;
      }
      byName.set(flow.name, flow);
      flows.push(flow);
    } catch (e) {
      if (e instanceof FlowError) errors.push(e);
      else throw e;
    }
  }
  return { flows, errors };
}

function duplicateName(flow: Flow, other: Flow): FlowFileError {
  const display = flow.displayFile;
  const src = parseYamlSource(readFileSync(flow.file, 'utf8'), display);
  const { line, col } = src.position(['name']);
  return new FlowFileError(display, [
    new FlowIssue({ file: display, line, col, keyPath: 'name' }, `flow name '${flow.name}' is also used by ${other.displayFile}`),
  ]);
}

/**
 * A flow by its `name:`, its file name (without extension) or a path to a
 * file. Throws FLOW_NOT_FOUND listing the available names, or the flow's
 * own FlowFileError when the matching file is broken.
 */
export function findFlow(dir: string, nameOrFile: string, opts: LoadFlowOptions): Flow {
  const asPath = path.resolve(opts.cwd ?? process.cwd(), nameOrFile);
  if (FLOW_EXTENSIONS.includes(path.extname(nameOrFile).toLowerCase()) && existsSync(asPath)) return loadFlowFile(asPath, opts);
  const names: string[] = [];
  for (const file of listFlowFiles(dir)) {
    const stem = path.basename(file, path.extname(file));
    try {
      const flow = loadFlowFile(file, opts);
      if (flow.name === nameOrFile || stem === nameOrFile) return flow;
      names.push(flow.name);
    } catch (e) {
      if (e instanceof FlowFileError && (e.flowName === nameOrFile || stem === nameOrFile)) throw e;
      if (!(e instanceof FlowError)) throw e;
      names.push(e instanceof FlowFileError && e.flowName ? e.flowName : stem);
    }
  }
  const hint = closest(nameOrFile, names);
  const available = names.length ? `; available: ${names.join(', ')}` : '; it has no flow files';
  throw new FlowError('FLOW_NOT_FOUND', {
    name: nameOrFile,
    dir: `${displayPath(path.resolve(dir), opts.cwd)}${hint ? ` (did you mean '${hint}'?)` : ''}${available}`,
  });
}

export interface FileValidation {
  file: string;
  /** Empty when the file is valid. */
  errors: FlowError[];
}

/**
 * What `msgflow validate` reports: every problem of every file (directories
 * are expanded to their flow files), plus duplicate flow names, input data
 * files that do not exist, and literal paths of files the steps' actions read
 * or write (fields declared with `inputFile()` / `outputFile()`) that cannot serve.
 */
export function validateFlowFiles(files: readonly string[], opts: LoadFlowOptions, project: readonly string[] = []): FileValidation[] {
  const expand = (list: readonly string[]) => list.flatMap((f) => (existsSync(f) && statSync(f).isDirectory() ? listFlowFiles(f) : [f]));
  const expanded = expand(files);
  const out: FileValidation[] = [];
  const byName = new Map<string, Flow>();
  for (const file of expanded) {
    const errors: FlowError[] = [];
    try {
      const flow = loadFlowFile(file, opts);
      const other = byName.get(flow.name);
      if (other) errors.push(...duplicateName(flow, other).errors);
      else byName.set(flow.name, flow);
      errors.push(...missingDataFiles(flow), ...unusableFilePaths(flow, opts.registry));
    } catch (e) {
      if (e instanceof FlowFileError) errors.push(...e.errors);
      else if (e instanceof FlowError) errors.push(e);
      else throw e;
    }
    out.push({ file: displayPath(path.resolve(opts.cwd ?? process.cwd(), file), opts.cwd), errors });
  }
  // Sub-flow steps and on.failure name other flows: checked once every file is loaded, against the
  // project's other flows too (validating one file must not make its siblings unknown).
  const others = projectFlows(expand(project), new Set(expanded.map((f) => path.resolve(f))), opts);
  const issues = subflowIssues(
    [...byName.values()],
    others.filter((f) => !byName.has(f.name)),
  );
  for (const [file, list] of issues) {
    const v = out.find((o) => path.resolve(opts.cwd ?? process.cwd(), o.file) === file);
    v?.errors.push(...list);
  }
  return out;
}

/** The flows of `files` not among `skip`; a file that does not load is left out (it is not being validated). */
function projectFlows(files: readonly string[], skip: ReadonlySet<string>, opts: LoadFlowOptions): Flow[] {
  return files.flatMap((file) => {
    if (skip.has(path.resolve(file))) return [];
    try {
      return [loadFlowFile(file, opts)];
    } catch (e) {
      if (e instanceof FlowFileError || e instanceof FlowError) return [];
      throw e;
    }
  });
}

function missingDataFiles(flow: Flow): FlowIssue[] {
  const out: FlowIssue[] = [];
  const display = flow.displayFile;
  let src: YamlSource | undefined;
  for (const [name, def] of Object.entries(flow.inputs)) {
    if (def.file === undefined || existsSync(path.resolve(flow.baseDir, def.file))) continue;
    src ??= parseYamlSource(readFileSync(flow.file, 'utf8'), display);
    const { line, col } = src.position(['inputs', name, 'file']);
    out.push(
      new FlowIssue(
        { file: display, line, col, keyPath: `inputs.${name}.file` },
        `data file not found: ${path.resolve(flow.baseDir, def.file)}`,
      ),
    );
  }
  return out;
}
