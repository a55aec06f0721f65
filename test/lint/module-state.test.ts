/**
 * The lint rule that keeps src/ free of hidden module state: a module-level
 * `let`, or a module-level value the module changes, fails `npm run lint`
 * unless a `// cache: <why it cannot collide>` comment documents it.
 */
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const eslint = new ESLint({ cwd: ROOT });

/** The msgflow/no-module-state messages for `code` as a file of src/engine. */
async function problems(code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, 'src/engine/module-state-sample.ts') });
  return result!.messages.filter((m) => m.ruleId === 'msgflow/no-module-state').map((m) => m.message);
}

describe('module-level state in src/', () => {
  it('a module-level let fails, naming it', async () => {
    expect(await problems('let current: string | undefined;\nexport const get = () => current;\n')).toEqual([
      expect.stringMatching(/^module-level `let current` is state shared by everything in the process/),
    ]);
  });

  it('a module-level Map, array or object the module changes fails; one it only reads passes', async () => {
    const code = [
      'const seen = new Map<string, number>();',
      'const log: string[] = [];',
      'const counts = { n: 0 };',
      "const KNOWN = new Set(['a', 'b']);",
      'export function note(k: string): boolean {',
      '  seen.set(k, 1);',
      '  log.push(k);',
      '  counts.n++;',
      '  return KNOWN.has(k);',
      '}',
      '',
    ].join('\n');
    const found = await problems(code);
    expect(found).toHaveLength(3);
    for (const name of ['seen', 'log', 'counts'])
      expect(found.some((m) => m.startsWith(`module-level \`${name}\` is changed at run time`))).toBe(true);
  });

  it('passes when a cache comment says why it cannot collide', async () => {
    const code = [
      '/** Parsed patterns. */',
      '// cache: keyed by the pattern text, and a RegExp without the g flag holds no state',
      'const patterns = new Map<string, RegExp>();',
      'export function pattern(text: string): RegExp {',
      '  let re = patterns.get(text);',
      '  if (!re) patterns.set(text, (re = new RegExp(text)));',
      '  return re;',
      '}',
      '',
    ].join('\n');
    expect(await problems(code)).toEqual([]);
  });

  it('state inside a function or an object is not module state', async () => {
    const code = [
      'export function counter() {',
      '  let n = 0;',
      '  const seen = new Set<number>();',
      '  return { next: () => (seen.add(++n), n) };',
      '}',
      'export class Pool {',
      '  private readonly pending = new Map<number, string>();',
      '  add(id: number): void {',
      "    this.pending.set(id, 'x');",
      '  }',
      '}',
      '',
    ].join('\n');
    expect(await problems(code)).toEqual([]);
  });
});
