/**
 * The checks of a flow file beyond its shape: they need the action registry,
 * the order of the steps, the declared inputs and env, and the scheduler's
 * validators. They run on the raw YAML value, defensively, so that one
 * mistake does not hide the others: `msgflow validate` reports every problem.
 */
import type { z } from 'zod';
import { formatKeyPath, type KeyPath } from '../../util/yaml-source.js';
import { validateCron, validateTimezone } from '../schedule/validate.js';
import { collectReferences } from '../expr/references.js';
import { ExpressionError } from '../expr/errors.js';
import { parseExpression, type Node as ExprNode } from '../expr/parser.js';
import { parseTemplate, hasTemplate } from '../expr/template.js';
import type { ActionRegistry, RegisteredAction } from '../registry/registry.js';
import { didYouMean } from '../registry/suggest.js';
import { RESERVED_KEYS, describeValue, issueReason } from '../../util/config-issues.js';
import { expandEnv } from '../../util/env-template.js';
import type { Reporter } from './reporter.js';
import { FlowFileSchema, NotificationTriggerSchema, RetrySchema, StepSchema, TriggerSchema } from './schema.js';
import { checkWithInput } from './check-with.js';
import { checkConversation, DIALOG_STEP_ID } from '../conversation/check.js';
import { regexError } from '../text-pattern.js';
import { ConversationSchema, StateSchema, TransitionSchema } from '../conversation/schema.js';
import { subflowName } from './subflows.js';

export interface CheckOptions {
  registry: ActionRegistry;
  /** Instance names from config.yaml; when given, `instance:` must be one. */
  instances?: readonly string[];
  /** Pool names from config.yaml (`pools:`); when given, a step's `pool: <name>` must be one. */
  pools?: readonly string[];
  /** Values of `env:` names. @default process.env */
  env?: Record<string, string | undefined>;
  /**
   * Where `${{ secrets.NAME }}` values come from: a name it does not have is
   * SECRET_MISSING at the expression's file:line:col. @default none (secrets are not checked)
   */
  secrets?: { has(name: string): boolean; describe(): string };
}

const STEP_VIEW_KEYS = ['status', 'output', 'done', 'failed', 'total', 'results', 'error'];
const RUN_KEYS = ['id', 'flow', 'startedAt', 'slot'];
const LOCAL_KEYS = ['url'];

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Known keys of the object at a path of the file, for "did you mean" on unknown keys. */
function knownKeysAt(path: readonly PropertyKey[]): string[] {
  const shapeKeys = (s: z.ZodType) => Object.keys((s as unknown as { shape: Obj }).shape ?? {});
  const p = path.map((x) => (typeof x === 'number' ? '#' : String(x))).join('/');
  if (p === '') return shapeKeys(FlowFileSchema);
  if (p === 'on') return shapeKeys(TriggerSchema);
  if (p === 'on/schedule') return ['cron', 'timezone'];
  if (p === 'on/notification') return shapeKeys(NotificationTriggerSchema);
  if (p === 'steps/#') return shapeKeys(StepSchema);
  if (p === 'conversation') return shapeKeys(ConversationSchema);
  if (/^conversation\/states\/[^/]+$/.test(p)) return shapeKeys(StateSchema);
  if (/^conversation\/states\/[^/]+\/on\/#$/.test(p)) return shapeKeys(TransitionSchema);
  if (p === 'steps/#/on-failure/#') return shapeKeys(StepSchema).filter((k) => k !== 'on-failure');
  if (p === 'steps/#/retry' || p === 'steps/#/on-failure/#/retry') return shapeKeys(RetrySchema);
  if (/^inputs\/[^/]+$/.test(p)) return ['file', 'value', 'default', 'description', 'type', 'required', 'maxRows', 'stream'];
  return [];
}

/** Zod issues of the file's shape -> positioned problems. */
export function reportSchemaIssues(rep: Reporter, issues: readonly z.core.$ZodIssue[]): void {
  for (const issue of issues) {
    const p = issue.path as (string | number)[];
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys)
        if (!RESERVED_KEYS.has(k)) rep.add([...p, k], `unknown key '${k}'${didYouMean(k, knownKeysAt(p))}`, { key: true });
      continue;
    }
    rep.add(p, issueReason(issue));
  }
}

/**
 * Runs every semantic check. Returns the resolved `env:` (names -> values)
 * so the loader does not interpolate twice.
 */
export function checkFlow(rep: Reporter, raw: Obj, opts: CheckOptions): { env: Record<string, string>; secrets: string[] } {
  checkReservedKeys(rep, raw, []);
  const env = checkEnv(rep, raw.env, opts.env ?? process.env);
  // Declared names, set or not: `env.X` of a listed but unset variable reads as undefined.
  const declaredEnv = Array.isArray(raw.env)
    ? raw.env.filter((x): x is string => typeof x === 'string')
    : isObj(raw.env)
      ? Object.keys(raw.env)
      : [];
  checkInstance(rep, raw, opts.instances);
  checkTrigger(rep, raw.on);
  checkNotificationTrigger(rep, raw.on, opts.instances);
  const hasEvent = isObj(raw.on) && (isObj(raw.on.notification) || isObj(raw.on.failure) || isObj(raw.on.alert));
  const inputNames = isObj(raw.inputs) ? Object.keys(raw.inputs) : [];
  checkRunKeys(rep, raw, { inputNames, envNames: declaredEnv, hasEvent });
  if (isObj(raw.inputs)) for (const [name, def] of Object.entries(raw.inputs)) checkInputDef(rep, name, def);
  const steps = flatSteps(raw.steps);
  checkConversation(rep, raw, { inputNames, envNames: declaredEnv });
  // A conversation's own step runs first: later steps read steps.dialog.
  const first = isObj(raw.conversation) ? [DIALOG_STEP_ID] : [];
  const ids = [...first, ...steps.map(({ step: s }) => (isObj(s) && typeof s.id === 'string' ? s.id : undefined))];
  const seen = new Map<string, string>();
  const secretNames = new Set<string>();
  steps.forEach(({ step, at }, i) => {
    if (!isObj(step)) return;
    const id = ids[i + first.length];
    if (id !== undefined && RESERVED_KEYS.has(id))
      rep.add([...at, 'id'], `'${id}' cannot be a step id: it names JavaScript object internals`);
    if (id !== undefined) {
      if (seen.has(id)) rep.add([...at, 'id'], `duplicate step id '${id}' (first used by ${seen.get(id)})`);
      else seen.set(id, formatKeyPath(at));
    }
    const action = checkUses(rep, step, at, opts.registry);
    const scope: RefScope = {
      stepIndex: i + first.length,
      ids,
      inputNames,
      envNames: declaredEnv,
      hasForEach: step.forEach !== undefined,
      hasEvent,
      secrets: opts.secrets,
      secretNames,
    };
    if (step.if !== undefined && typeof step.if === 'string')
      checkExpressionsIn(rep, [...at, 'if'], step.if, { ...scope, where: 'if' }, true);
    if (step.forEach !== undefined) checkExpressionsIn(rep, [...at, 'forEach'], step.forEach, { ...scope, where: 'forEach' });
    if (isObj(step.with)) {
      // Keys the action evaluates itself once per record (rawInputs) may use
      // `item` without a forEach: the action sets it. Syntax is still checked.
      const raw = new Set(action?.rawInputs ?? []);
      for (const [k, v] of Object.entries(step.with)) {
        checkExpressionsIn(rep, [...at, 'with', k], v, {
          ...scope,
          where: 'with',
          hasForEach: scope.hasForEach || raw.has(k),
          hasRow: raw.has(k),
        });
      }
      if (action) checkWithInput(rep, [...at, 'with'], step.with, action);
      if (action) checkConfigNames(rep, [...at, 'with'], step.with, action, opts);
    } else if (step.with === undefined && action) {
      checkWithInput(rep, at, {}, action, true);
    }
  });
  // `outputs:` are evaluated once every step is done: they may read any step.
  if (isObj(raw.outputs)) {
    const scope: RefScope = {
      stepIndex: steps.length + first.length,
      ids,
      inputNames,
      envNames: declaredEnv,
      hasForEach: false,
      hasEvent,
      secrets: opts.secrets,
      secretNames,
    };
    for (const [k, v] of Object.entries(raw.outputs)) checkExpressionsIn(rep, ['outputs', k], v, { ...scope, where: 'with' });
  }
  return { env, secrets: [...secretNames].sort() };
}

/**
 * The flow's steps in the order they may run, each with its path in the
 * file: a step, then its `on-failure:` steps (which read the steps before
 * them, the failed one included, as later steps read theirs).
 */
function flatSteps(raw: unknown): { step: unknown; at: (string | number)[] }[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((step, i) => {
    const handlers = isObj(step) && Array.isArray(step['on-failure']) ? step['on-failure'] : [];
    return [{ step, at: ['steps', i] }, ...handlers.map((h, j) => ({ step: h, at: ['steps', i, 'on-failure', j] }))];
  });
}

/**
 * `concurrency.key` and `debounce.key`: computed when a run is decided, from
 * what its trigger gives (event, inputs, env, run), never from steps; and
 * `debounce` gathers notifications, so only a notification flow has one.
 */
function checkRunKeys(rep: Reporter, raw: Obj, names: Pick<RefScope, 'inputNames' | 'envNames' | 'hasEvent'>): void {
  const scope: RefScope = { ...names, stepIndex: -1, ids: [], hasForEach: false, secretNames: new Set(), where: 'key' };
  for (const block of ['concurrency', 'debounce'] as const) {
    const b = raw[block];
    if (isObj(b) && typeof b.key === 'string') checkExpressionsIn(rep, [block, 'key'], b.key, scope);
  }
  if (isObj(raw.debounce) && !scope.hasEvent)
    rep.add(['debounce'], 'debounce gathers notifications: only a flow triggered by a notification (on: { notification: ... }) has one');
}

/** `__proto__`, `constructor`, `prototype` as a key anywhere (input names included): refused with its position. */
function checkReservedKeys(rep: Reporter, value: unknown, path: (string | number)[]): void {
  if (Array.isArray(value)) value.forEach((v, i) => checkReservedKeys(rep, v, [...path, i]));
  else if (isObj(value)) {
    for (const k of Object.keys(value)) {
      if (RESERVED_KEYS.has(k))
        rep.add([...path, k], `'${k}' cannot be used as a key: it names JavaScript object internals`, { key: true });
      checkReservedKeys(rep, value[k], [...path, k]);
    }
  }
}

function checkEnv(rep: Reporter, raw: unknown, processEnv: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(raw)) {
    // A bare list passes variables through. An unset one is an error, never a silent "": a flow
    // that lists a variable depends on it (`NAME: "${NAME:-default}"` makes it optional).
    raw.forEach((name, i) => {
      if (typeof name !== 'string') return;
      if (processEnv[name] !== undefined) out[name] = processEnv[name]!;
      else
        rep.add(
          ['env', i],
          `environment variable ${name} is not set (listed in env:); set it, or write env: { ${name}: "\${${name}:-default}" }`,
        );
    });
  } else if (isObj(raw)) {
    for (const [name, v] of Object.entries(raw)) {
      if (typeof v !== 'string') {
        if (typeof v === 'number' || typeof v === 'boolean') out[name] = String(v);
        continue;
      }
      out[name] = expandEnv(v, processEnv, (ref) =>
        rep.add(['env', name], `environment variable ${ref} is not set and has no default (write \${${ref}:-default})`),
      );
    }
  }
  return out;
}

function checkInstance(rep: Reporter, raw: Obj, instances: readonly string[] | undefined): void {
  if (!instances) return;
  const name = raw.instance === undefined ? 'default' : raw.instance;
  if (typeof name !== 'string' || instances.includes(name)) return;
  const list = instances.length ? instances.join(', ') : '(none)';
  const path: KeyPath = raw.instance === undefined ? [] : ['instance'];
  rep.add(path, `unknown instance '${name}'${didYouMean(name, instances)}: config.yaml declares ${list}`);
}

/** The names of config.yaml a step's `with:` refers to (ActionDefinition.configNames): each must be one of config.yaml's. */
function checkConfigNames(rep: Reporter, at: KeyPath, withValue: Obj, action: RegisteredAction, opts: CheckOptions): void {
  for (const ref of action.configNames?.(withValue) ?? []) {
    const known = ref.kind === 'instance' ? opts.instances : opts.pools;
    if (!known || hasTemplate(ref.name) || known.includes(ref.name)) continue;
    const list = known.length ? known.join(', ') : '(none)';
    const section = ref.kind === 'instance' ? 'instances' : 'pools';
    rep.add(
      [...at, ...ref.path],
      `unknown ${ref.kind} '${ref.name}'${didYouMean(ref.name, known)}: config.yaml ${section} declares ${list}`,
    );
  }
}

function checkTrigger(rep: Reporter, on: unknown): void {
  if (!isObj(on) || !isObj(on.schedule)) return;
  const { cron, timezone } = on.schedule;
  if (typeof cron === 'string') {
    const err = validateCron(cron);
    if (err) rep.add(['on', 'schedule', 'cron'], err);
  }
  if (typeof timezone === 'string') {
    const err = validateTimezone(timezone);
    if (err) rep.add(['on', 'schedule', 'timezone'], err);
  }
}

/**
 * `on.notification`: the text pattern must compile as the consumer compiles
 * it (case-insensitive), and the instance must be one of config.yaml's.
 */
function checkNotificationTrigger(rep: Reporter, on: unknown, instances: readonly string[] | undefined): void {
  if (!isObj(on) || !isObj(on.notification)) return;
  const { text, instance } = on.notification;
  if (typeof text === 'string') {
    const err = regexError(text);
    if (err) rep.add(['on', 'notification', 'text'], `invalid regular expression /${text}/: ${err}`);
  }
  if (typeof instance === 'string' && instances && !instances.includes(instance)) {
    const list = instances.length ? instances.join(', ') : '(none)';
    rep.add(
      ['on', 'notification', 'instance'],
      `unknown instance '${instance}'${didYouMean(instance, instances)}: config.yaml declares ${list}`,
    );
  }
}

const TYPE_CHECKS: Record<string, (v: unknown) => boolean> = {
  string: (v) => typeof v === 'string',
  number: (v) => typeof v === 'number',
  boolean: (v) => typeof v === 'boolean',
  array: Array.isArray,
  object: isObj,
  any: () => true,
};

function checkInputDef(rep: Reporter, name: string, def: unknown): void {
  if (!isObj(def) || typeof def.type !== 'string' || !(def.type in TYPE_CHECKS)) return;
  for (const k of ['value', 'default'] as const) {
    if (def[k] !== undefined && def[k] !== null && !TYPE_CHECKS[def.type]!(def[k])) {
      rep.add(['inputs', name, k], `input '${name}' is declared type ${def.type}, but ${k} is ${describeValue(def[k])}`);
    }
  }
  if (def.stream === true) {
    if (def.type !== 'string' && def.type !== 'any')
      rep.add(
        ['inputs', name, 'type'],
        `input '${name}' streams its file: its value is the file's path (type string), not type ${def.type}`,
      );
  } else if (def.file !== undefined && (def.type === 'string' || def.type === 'number' || def.type === 'boolean')) {
    rep.add(['inputs', name, 'type'], `input '${name}' reads a file, which gives an array or an object, not a ${def.type}`);
  }
}

function checkUses(rep: Reporter, step: Obj, at: (string | number)[], registry: ActionRegistry): RegisteredAction | undefined {
  if (typeof step.uses !== 'string' || step.uses === '') return undefined;
  // A sub-flow: the child and its inputs are checked against the other flows (subflows.ts).
  if (subflowName(step.uses) !== undefined) return undefined;
  const action = registry.get(step.uses);
  if (action) return action;
  const s = registry.suggest(step.uses);
  rep.add([...at, 'uses'], '', {
    code: 'UNKNOWN_ACTION',
    params: { action: step.uses, hint: s ? ` (did you mean '${s}'?)` : '' },
  });
  return undefined;
}

interface RefScope {
  stepIndex: number;
  ids: (string | undefined)[];
  inputNames: string[];
  envNames: string[];
  hasForEach: boolean;
  /** A key the action evaluates per record (rawInputs): `row` is set there. */
  hasRow?: boolean;
  /** The flow has `on.notification`: `event` is set in its runs. */
  hasEvent: boolean;
  /** `key`: a concurrency or debounce key, computed before any step runs. */
  where?: 'if' | 'forEach' | 'with' | 'key';
  secrets?: CheckOptions['secrets'];
  /** Collects the secret names the flow reads (its runs resolve only those). */
  secretNames: Set<string>;
}

/** Parses every template inside `value` and checks what it reads. */
function checkExpressionsIn(rep: Reporter, path: (string | number)[], value: unknown, scope: RefScope, bare = false): void {
  if (typeof value === 'string') {
    if (!hasTemplate(value)) {
      // `if: steps.a.failed > 0` (no ${{ }}) is an expression too, as in CI workflows.
      if (bare && value.trim() !== '') checkOne(rep, path, value, 0, scope, () => parseExpression(value));
      return;
    }
    let parts;
    try {
      parts = parseTemplate(value).parts;
    } catch (e) {
      if (!(e instanceof ExpressionError)) throw e;
      addExprError(rep, path, e, e.templateOffset ?? 0);
      return;
    }
    for (const p of parts) if (p.kind === 'expr') checkRefs(rep, path, p.node, p.source, p.offset, scope);
    return;
  }
  if (Array.isArray(value)) value.forEach((v, i) => checkExpressionsIn(rep, [...path, i], v, scope));
  else if (isObj(value)) for (const [k, v] of Object.entries(value)) checkExpressionsIn(rep, [...path, k], v, scope);
}

function checkOne(rep: Reporter, path: (string | number)[], source: string, base: number, scope: RefScope, parse: () => ExprNode): void {
  let node: ExprNode;
  try {
    node = parse();
  } catch (e) {
    if (!(e instanceof ExpressionError)) throw e;
    addExprError(rep, path, e, base + e.offset);
    return;
  }
  checkRefs(rep, path, node, source, base, scope);
}

function addExprError(rep: Reporter, path: (string | number)[], e: ExpressionError, offset: number): void {
  rep.add(path, e.reason, { offset, code: 'EXPRESSION_ERROR', params: { expression: e.params.expression, reason: e.reason }, cause: e });
}

function checkRefs(rep: Reporter, path: (string | number)[], node: ExprNode, source: string, base: number, scope: RefScope): void {
  const expression = `\${{ ${source.trim()} }}`;
  const bad = (reason: string, pos: number) =>
    rep.add(path, reason, { offset: base + pos, code: 'EXPRESSION_ERROR', params: { expression, reason } });
  for (const ref of collectReferences(node)) {
    const [first, second] = ref.path;
    const at = ref.positions[1] ?? ref.positions[0]!;
    if (scope.where === 'key' && ['steps', 'item', 'index', 'row', 'secrets'].includes(ref.root)) {
      bad(
        ref.root === 'secrets'
          ? "a secret cannot be a run's key: keys are shown (lease names, run records)"
          : `'${ref.root}' is not set when a run's key is computed (before its steps): use event, inputs, env or run`,
        ref.positions[0]!,
      );
      continue;
    }
    switch (ref.root) {
      case 'steps':
        if (first !== undefined) checkStepRef(scope, first, second, at, ref.positions[2]!, bad);
        break;
      case 'inputs':
        if (first !== undefined && !scope.inputNames.includes(first)) {
          const list = scope.inputNames.length ? `; inputs: ${scope.inputNames.join(', ')}` : '; the flow declares no inputs';
          bad(`unknown input '${first}'${didYouMean(first, scope.inputNames)}${list}`, at);
        }
        break;
      case 'env':
        if (first !== undefined && !scope.envNames.includes(first)) {
          bad(`env.${first} is not available: a flow reads only the variables it lists under env:`, at);
        }
        break;
      case 'item':
      case 'index':
        if (!scope.hasForEach) bad(`'${ref.root}' is only set in a step with forEach`, ref.positions[0]!);
        else if (scope.where === 'forEach') bad(`'${ref.root}' is not set yet while forEach is evaluated`, ref.positions[0]!);
        break;
      case 'session':
      case 'message':
      case 'value':
        bad(
          `'${ref.root}' is only set in a conversation's templates (say, set, file); a step after the dialog reads steps.dialog.output`,
          ref.positions[0]!,
        );
        break;
      case 'row':
        if (!scope.hasRow) bad("'row' is only set in a job's per-recipient field (e.g. messages.broadcast's message)", ref.positions[0]!);
        break;
      case 'event':
        if (!scope.hasEvent)
          bad(
            "'event' is only set in a flow triggered by a notification, a failure or an alert (on: { notification | failure | alert: ... })",
            ref.positions[0]!,
          );
        break;
      case 'local':
        if (first !== undefined && !LOCAL_KEYS.includes(first))
          bad(`local has no '${first}'${didYouMean(first, LOCAL_KEYS)}: use ${LOCAL_KEYS.join(', ')}`, at);
        break;
      case 'secrets':
        checkSecretRef(rep, path, ref, scope, expression, base);
        break;
      case 'run':
        if (first !== undefined && !RUN_KEYS.includes(first))
          bad(`run has no '${first}'${didYouMean(first, RUN_KEYS)}: use ${RUN_KEYS.join(', ')}`, at);
        break;
    }
  }
}

/** `steps.<first>.<second>`: a step before this one, and a key its view has. */
function checkStepRef(
  scope: RefScope,
  first: string,
  second: string | undefined,
  at: number,
  secondAt: number,
  bad: (reason: string, pos: number) => void,
): void {
  const target = scope.ids.indexOf(first);
  if (target < 0) {
    const known = scope.ids.filter((x): x is string => x !== undefined);
    bad(`unknown step '${first}'${didYouMean(first, known)}`, at);
  } else if (target === scope.stepIndex) bad(`step '${first}' cannot read its own result`, at);
  else if (target > scope.stepIndex) bad(`step '${first}' runs after this step: its result is not there yet`, at);
  else if (second !== undefined && !STEP_VIEW_KEYS.includes(second)) {
    bad(`steps.${first} has no '${second}'${didYouMean(second, STEP_VIEW_KEYS)}: use ${STEP_VIEW_KEYS.join(', ')}`, secondAt);
  }
}

/** `secrets.NAME`: a name (never the whole object, which would print every secret), one the sources have. */
function checkSecretRef(
  rep: Reporter,
  path: (string | number)[],
  ref: ReturnType<typeof collectReferences>[number],
  scope: RefScope,
  expression: string,
  base: number,
): void {
  const name = ref.path[0];
  if (name === undefined) {
    const reason = 'name one secret: secrets.NAME (the secrets as a whole cannot be read)';
    rep.add(path, reason, { offset: base + ref.positions[0]!, code: 'EXPRESSION_ERROR', params: { expression, reason } });
    return;
  }
  scope.secretNames.add(name);
  if (!scope.secrets || scope.secrets.has(name)) return;
  const sources = scope.secrets.describe();
  rep.add(path, `secret ${name} is not set (${sources})`, {
    offset: base + ref.positions[1]!,
    code: 'SECRET_MISSING',
    params: { name, sources },
  });
}
