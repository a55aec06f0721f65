/**
 * The checks of a `conversation:` block beyond its shape, each reported at
 * its place in the file: every `goto`/`start` names a state, every state is
 * reachable from the start, patterns compile, templates parse and read only
 * what a dialog's templates have (`session`, `message`, `value` after an
 * `expect:`, `event`, `inputs`, `env`, `local`, `run`), and the flow's trigger lets every
 * message of a chat reach the dialog.
 */
import { ExpressionError } from '../expr/errors.js';
import { DIALOG_ROOTS } from '../expr/parser.js';
import { collectReferences } from '../expr/references.js';
import { hasTemplate, parseTemplate } from '../expr/template.js';
import { didYouMean } from '../registry/suggest.js';
import type { Reporter } from '../flow/reporter.js';
import { regexError } from '../text-pattern.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
type Path = (string | number)[];

/** The step id the dialog's own step has: later steps read `steps.dialog.output`. */
export const DIALOG_STEP_ID = 'dialog';
/** The action of that step (actions/dialog.ts). */
export const DIALOG_ACTION = 'dialog';

/** What a dialog's templates may read besides its own roots. */
export interface DialogRefScope {
  inputNames: string[];
  envNames: string[];
}

function checkPattern(rep: Reporter, path: Path, v: unknown): void {
  if (typeof v !== 'string') return;
  const err = regexError(v);
  if (err) rep.add(path, `invalid regular expression /${v}/: ${err}`);
}

/** Every template in `value`: it parses, and reads only roots a dialog's template has. */
function checkTemplates(rep: Reporter, path: Path, value: unknown, scope: DialogRefScope & { hasValue: boolean }): void {
  if (Array.isArray(value)) return value.forEach((v, i) => checkTemplates(rep, [...path, i], v, scope));
  if (isObj(value)) return Object.entries(value).forEach(([k, v]) => checkTemplates(rep, [...path, k], v, scope));
  if (typeof value !== 'string' || !hasTemplate(value)) return;
  let parts;
  try {
    parts = parseTemplate(value).parts;
  } catch (e) {
    if (!(e instanceof ExpressionError)) throw e;
    rep.add(path, e.reason, {
      offset: e.templateOffset ?? 0,
      code: 'EXPRESSION_ERROR',
      params: { expression: e.params.expression, reason: e.reason },
    });
    return;
  }
  for (const p of parts) {
    if (p.kind !== 'expr') continue;
    for (const ref of collectReferences(p.node)) {
      const reason = refProblem(ref.root, ref.path[0], scope);
      if (!reason) continue;
      const expression = `\${{ ${p.source.trim()} }}`;
      rep.add(path, reason, { offset: p.offset + ref.positions[0]!, code: 'EXPRESSION_ERROR', params: { expression, reason } });
    }
  }
}

function refProblem(root: string, first: string | undefined, scope: DialogRefScope & { hasValue: boolean }): string | undefined {
  if (root === 'value' && !scope.hasValue) return "'value' is only set in a transition with expect: (the value it parsed)";
  if ((DIALOG_ROOTS as readonly string[]).includes(root) || ['event', 'local', 'run'].includes(root)) return undefined;
  if (root === 'inputs')
    return first === undefined || scope.inputNames.includes(first)
      ? undefined
      : `unknown input '${first}'${didYouMean(first, scope.inputNames)}`;
  if (root === 'env')
    return first === undefined || scope.envNames.includes(first)
      ? undefined
      : `env.${first} is not available: a flow reads only the variables it lists under env:`;
  return `'${root}' is not set in a conversation's templates: they read session, message, value, event, inputs, env, local and run`;
}

/** A goto-like field names a state. */
function checkTarget(rep: Reporter, path: Path, v: unknown, names: string[]): void {
  if (typeof v === 'string' && !names.includes(v))
    rep.add(path, `unknown state '${v}'${didYouMean(v, names)}; states: ${names.join(', ')}`);
}

/** The states each state can lead to (transitions' goto, the fallback's goto). */
function edges(state: Obj): string[] {
  const out: string[] = [];
  if (Array.isArray(state.on)) for (const t of state.on) if (isObj(t) && typeof t.goto === 'string') out.push(t.goto);
  if (isObj(state.fallback) && typeof state.fallback.goto === 'string') out.push(state.fallback.goto);
  return out;
}

function checkReachable(rep: Reporter, states: Obj, start: unknown): void {
  if (typeof start !== 'string' || !(start in states)) return;
  const seen = new Set<string>([start]);
  const queue = [start];
  while (queue.length) {
    const state = states[queue.shift()!];
    for (const next of isObj(state) ? edges(state) : []) {
      if (seen.has(next) || !(next in states)) continue;
      seen.add(next);
      queue.push(next);
    }
  }
  for (const name of Object.keys(states)) {
    if (!seen.has(name))
      rep.add(['conversation', 'states', name], `state '${name}' is unreachable: no goto from '${start}' leads to it`, { key: true });
  }
}

function checkState(rep: Reporter, name: string, state: Obj, names: string[], scope: DialogRefScope): void {
  const at: Path = ['conversation', 'states', name];
  checkTemplates(rep, at, { say: state.say, buttons: state.buttons, file: state.file }, { ...scope, hasValue: false });
  if (Array.isArray(state.on)) {
    state.on.forEach((t, i) => {
      if (!isObj(t)) return;
      const tp: Path = [...at, 'on', i];
      checkPattern(rep, [...tp, 'text'], t.text);
      checkTarget(rep, [...tp, 'goto'], t.goto, names);
      checkTemplates(rep, [...tp, 'set'], t.set, { ...scope, hasValue: t.expect !== undefined });
      checkTemplates(rep, [...tp, 'say'], t.say, { ...scope, hasValue: t.expect !== undefined });
    });
  }
  if (isObj(state.fallback)) {
    checkTarget(rep, [...at, 'fallback', 'goto'], state.fallback.goto, names);
    checkTemplates(rep, [...at, 'fallback'], { say: state.fallback.say, file: state.fallback.file }, { ...scope, hasValue: false });
  }
}

/** Checks the flow's `conversation:` block (nothing when it has none). */
export function checkConversation(rep: Reporter, raw: Obj, scope: DialogRefScope): void {
  const c = raw.conversation;
  if (!isObj(c)) return;
  const on = isObj(raw.on) ? raw.on : {};
  const trigger = isObj(on.notification) ? on.notification : undefined;
  if (!trigger)
    rep.add(
      raw.on === undefined ? ['conversation'] : ['on'],
      'a conversation is driven by incoming messages: give the flow on: { notification: { type: incomingMessageReceived } }',
      { key: raw.on === undefined },
    );
  else if ((trigger.type ?? 'incomingMessageReceived') !== 'incomingMessageReceived')
    rep.add(
      ['on', 'notification', 'type'],
      'a conversation is driven by incoming messages: the trigger type must be incomingMessageReceived',
    );
  else if (trigger.text !== undefined)
    rep.add(
      ['on', 'notification', 'text'],
      'a conversation needs every message of the chat (its answers too): put the pattern in conversation.opener, which starts a session',
    );
  if (Array.isArray(raw.steps) && raw.steps.some((s) => isObj(s) && s.id === DIALOG_STEP_ID))
    rep.add(
      ['steps', raw.steps.findIndex((s) => isObj(s) && s.id === DIALOG_STEP_ID), 'id'],
      `step id '${DIALOG_STEP_ID}' is the conversation's own step: choose another id`,
    );
  checkPattern(rep, ['conversation', 'opener'], c.opener);
  if (isObj(c.commands)) for (const [k, v] of Object.entries(c.commands)) checkPattern(rep, ['conversation', 'commands', k], v);
  if (!isObj(c.states)) return;
  const names = Object.keys(c.states);
  checkTarget(rep, ['conversation', 'start'], c.start, names);
  for (const [name, state] of Object.entries(c.states)) if (isObj(state)) checkState(rep, name, state, names, scope);
  if (isObj(c.idle)) checkTemplates(rep, ['conversation', 'idle'], { say: c.idle.say, file: c.idle.file }, { ...scope, hasValue: false });
  checkReachable(rep, c.states, c.start);
}
