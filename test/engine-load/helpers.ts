import { project } from '../support/project.js';
import { createRegistry, type ActionRegistry } from '../../src/engine/registry/registry.js';
import { registerBuiltins } from '../../src/engine/registry/builtins.js';

/** A temp project folder holding `files` (test/support/project.ts). */
export const tempProject = (files: Record<string, string> = {}): string => project(files, 'msgflow-load-');

export function builtinRegistry(): ActionRegistry {
  const r = createRegistry();
  registerBuiltins(r);
  return r;
}
