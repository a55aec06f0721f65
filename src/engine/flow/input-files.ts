/**
 * `msgflow validate`'s check of the files a step's action reads or writes:
 * the fields its input schema declares with `inputFile()` (a job's
 * `with.file`) or `outputFile()` (its `with.report`). A literal path that does
 * not exist, or whose type the action cannot handle, would otherwise fail only
 * when the flow runs, at 02:00, with no position. Not checked on every load: a
 * daemon may start before a nightly export has written its file.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { FILE_FIELDS, type FileFieldMeta } from '../action.js';
import { containsTemplate } from '../expr/template.js';
import type { ActionRegistry } from '../registry/registry.js';
import { parseYamlSource, type YamlSource } from '../../util/yaml-source.js';
import { objectShapeOf } from './check-with.js';
import { FlowIssue } from './errors.js';
import type { Flow } from './types.js';

/** The `with:` keys of an action that name files it reads or writes, with what they accept. */
export function fileFields(input: z.ZodType): Array<[string, FileFieldMeta]> {
  const shape = objectShapeOf(input)?.shape ?? {};
  return Object.entries(shape).flatMap(([k, field]) => {
    const meta = FILE_FIELDS.get(field);
    return meta ? [[k, meta] as [string, FileFieldMeta]] : [];
  });
}

/** Why a literal file path of a step cannot serve the action, or undefined when it can. */
function fileProblem(abs: string, shown: string, meta: FileFieldMeta, action: string): string | undefined {
  const verb = meta.access === 'read' ? 'reads' : 'writes';
  const exists = existsSync(abs);
  if (!exists && meta.access === 'read') {
    return `${shown}: file not found (action '${action}' reads it; paths are relative to the project folder)`;
  }
  if (exists && !statSync(abs).isFile()) return `${shown}: a folder, not a file (action '${action}' ${verb} it)`;
  const ext = path.extname(abs).toLowerCase();
  if (meta.extensions && !meta.extensions.includes(ext)) {
    return `${shown}: unsupported file type '${ext || '(none)'}': use ${meta.extensions.join(', ')} (action '${action}' ${verb} it)`;
  }
  return undefined;
}

/** Every literal file path of the flow's steps that their action cannot read or write, at its position. */
export function unusableFilePaths(flow: Flow, registry: ActionRegistry): FlowIssue[] {
  const out: FlowIssue[] = [];
  let src: YamlSource | undefined;
  for (const [i, step] of flow.steps.entries()) {
    const action = registry.get(step.uses);
    const withBlock = step.with as Record<string, unknown> | undefined;
    if (!action || !withBlock) continue;
    for (const [key, meta] of fileFields(action.input as z.ZodType)) {
      const value = withBlock[key];
      if (typeof value !== 'string' || value === '' || containsTemplate(value)) continue;
      const problem = fileProblem(path.resolve(flow.baseDir, value), value, meta, action.name);
      if (!problem) continue;
      src ??= parseYamlSource(readFileSync(flow.file, 'utf8'), flow.displayFile);
      const { line, col } = src.position(['steps', i, 'with', key]);
      out.push(new FlowIssue({ file: flow.displayFile, line, col, keyPath: `steps[${i}].with.${key}` }, problem));
    }
  }
  return out;
}
