/**
 * The checks of sub-flow steps (`uses: flow/<name>`) that need the other
 * flows: the child exists, `with:` names only its inputs and gives every
 * required one, and no flow calls itself through a chain of sub-flows.
 * `msgflow validate` reports each with the step's file:line:col.
 */
import { readFileSync } from 'node:fs';
import { parseYamlSource, type KeyPath, type YamlSource } from '../../util/yaml-source.js';
import { didYouMean } from '../registry/suggest.js';
import { FlowIssue } from './errors.js';
import type { Flow } from './types.js';

/** `uses:` prefix of a sub-flow step. */
export const SUBFLOW_PREFIX = 'flow/';

/** The child flow's name of a `uses: flow/<name>` step, else undefined. */
export function subflowName(uses: string): string | undefined {
  return uses.startsWith(SUBFLOW_PREFIX) ? uses.slice(SUBFLOW_PREFIX.length) : undefined;
}

/** A flow input the caller must give: required, with no value of its own. */
function mustGive(def: Flow['inputs'][string]): boolean {
  return def.required === true && def.file === undefined && def.value === undefined && def.default === undefined;
}

/** The flows a flow calls as sub-flows, by name (its steps' `uses: flow/<name>`). */
function callees(flow: Flow): string[] {
  return flow.steps.flatMap((s) => {
    const n = subflowName(s.uses);
    return n === undefined ? [] : [n];
  });
}

/** A chain of calls from `start` back to itself, e.g. [a, b, a], or undefined. */
function cycleFrom(start: string, byName: ReadonlyMap<string, Flow>): string[] | undefined {
  const seen = new Set<string>();
  const walk = (name: string, path: string[]): string[] | undefined => {
    for (const next of callees(byName.get(name)!)) {
      if (next === start) return [...path, next];
      if (seen.has(next) || !byName.has(next)) continue;
      seen.add(next);
      const found = walk(next, [...path, next]);
      if (found) return found;
    }
    return undefined;
  };
  return walk(start, [start]);
}

/**
 * Every sub-flow and `on.failure` problem of `flows`, by flow file (absolute
 * path). `others` are the project's further flows: names resolve against
 * them too, but their own problems are not reported.
 */
export function subflowIssues(flows: readonly Flow[], others: readonly Flow[] = []): Map<string, FlowIssue[]> {
  const byName = new Map([...others, ...flows].map((f) => [f.name, f]));
  const out = new Map<string, FlowIssue[]>();
  for (const flow of flows) {
    let src: YamlSource | undefined;
    const add = (path: KeyPath, reason: string, key = false) => {
      src ??= parseYamlSource(readFileSync(flow.file, 'utf8'), flow.displayFile);
      const { line, col } = src.position(path, { key });
      const keyPath = path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
      const list = out.get(flow.file) ?? [];
      list.push(new FlowIssue({ file: flow.displayFile, line, col, keyPath }, reason));
      out.set(flow.file, list);
    };
    (flow.on.failure?.flows ?? []).forEach((name, j) => {
      if (name !== '*' && !byName.has(name))
        add(['on', 'failure', 'flows', j], `unknown flow '${name}'${didYouMean(name, [...byName.keys()])}: no flow file has name: ${name}`);
    });
    flow.steps.forEach((step, i) => {
      const name = subflowName(step.uses);
      if (name === undefined) return;
      const child = byName.get(name);
      if (!child) {
        add(['steps', i, 'uses'], `unknown flow '${name}'${didYouMean(name, [...byName.keys()])}: no flow file has name: ${name}`);
        return;
      }
      const declared = Object.keys(child.inputs);
      for (const key of Object.keys(step.with)) {
        if (Object.hasOwn(child.inputs, key)) continue;
        const list = declared.length ? `; it declares ${declared.join(', ')}` : '; it declares no inputs';
        add(['steps', i, 'with', key], `flow '${name}' has no input '${key}'${didYouMean(key, declared)}${list}`, true);
      }
      for (const [input, def] of Object.entries(child.inputs)) {
        if (mustGive(def) && !Object.hasOwn(step.with, input))
          add(['steps', i, 'with'], `flow '${name}' needs input '${input}' (required, no default): give it under with:`);
      }
      if (name === flow.name) add(['steps', i, 'uses'], `flow '${name}' calls itself: sub-flows cannot form a cycle`);
    });
    const cycle = flow.steps.some((s) => subflowName(s.uses) === flow.name) ? undefined : cycleFrom(flow.name, byName);
    if (cycle) {
      const i = flow.steps.findIndex((s) => subflowName(s.uses) === cycle[1]);
      add(['steps', i, 'uses'], `sub-flows form a cycle: ${cycle.join(' -> ')}`);
    }
  }
  return out;
}
