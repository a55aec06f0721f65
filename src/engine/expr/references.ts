/**
 * Static analysis of expressions: which scope paths they read. The flow
 * loader uses it to report `steps.nope.output` or `inputs.typo` when the
 * flow is loaded instead of when the run gets there.
 */
import type { Node, ScopeRoot } from './parser.js';

export interface Reference {
  root: ScopeRoot;
  /** Leading property names known without running (`steps.check.failed` -> ['check', 'failed']); stops at the first computed index. */
  path: string[];
  /** Offsets (in the expression) of the root and of each name in `path`. */
  positions: number[];
}

export function collectReferences(node: Node, out: Reference[] = []): Reference[] {
  switch (node.type) {
    case 'root':
      out.push({ root: node.name, path: [], positions: [node.pos] });
      break;
    case 'member': {
      const chain = staticChain(node);
      if (chain) {
        out.push(chain);
        // Computed indexes inside the chain (`steps[inputs.k]`) still need visiting.
        visitComputed(node, out);
      } else {
        collectReferences(node.object, out);
        collectReferences(node.property, out);
      }
      break;
    }
    case 'call':
    case 'array':
      for (const n of node.type === 'call' ? node.args : node.items) collectReferences(n, out);
      break;
    case 'unary':
      collectReferences(node.arg, out);
      break;
    case 'binary':
      collectReferences(node.left, out);
      collectReferences(node.right, out);
      break;
    case 'conditional':
      collectReferences(node.test, out);
      collectReferences(node.then, out);
      collectReferences(node.otherwise, out);
      break;
    case 'lambda':
      collectReferences(node.body, out);
      break;
    case 'literal':
    case 'param':
      break;
  }
  return out;
}

/** root.a.b['c'] -> reference; stops (keeping what it has) at a computed, non-literal index. */
function staticChain(node: Node): Reference | undefined {
  const names: string[] = [];
  const positions: number[] = [];
  let cur: Node = node;
  const stack: Node[] = [];
  while (cur.type === 'member') {
    stack.push(cur);
    cur = cur.object;
  }
  if (cur.type !== 'root') return undefined;
  positions.push(cur.pos);
  for (let i = stack.length - 1; i >= 0; i--) {
    const m = stack[i] as Extract<Node, { type: 'member' }>;
    if (m.property.type === 'literal' && (typeof m.property.value === 'string' || typeof m.property.value === 'number')) {
      names.push(String(m.property.value));
      positions.push(m.property.pos);
    } else break;
  }
  return { root: cur.name, path: names, positions };
}

function visitComputed(node: Node, out: Reference[]): void {
  let cur: Node = node;
  while (cur.type === 'member') {
    if (cur.property.type !== 'literal') collectReferences(cur.property, out);
    cur = cur.object;
  }
}
