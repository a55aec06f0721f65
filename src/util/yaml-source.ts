/**
 * YAML with positions. Config and flow files are parsed here so every error
 * can say `file:line:col` and the key path, and so hostile input (alias bombs,
 * huge files) is refused before it costs memory.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { MsgflowError } from '../api/errors.js';

export type KeyPath = readonly (string | number)[];

export interface YamlSourceOptions {
  /** @default 1048576 (1 MiB) */
  maxBytes?: number;
  /** Alias expansions allowed before the file is refused. @default 100 */
  maxAliasCount?: number;
}

export interface YamlSource {
  file: string;
  value: unknown;
  /** `file:line:col` of the node at `path`, or of its nearest existing parent. */
  locate(path: KeyPath, opts?: { key?: boolean }): string;
  /** Line and column (1-based) as numbers. */
  position(path: KeyPath, opts?: { key?: boolean }): { line: number; col: number };
}

/** `instances.default.idInstance`, `steps[0].with.chatId`. */
export function formatKeyPath(path: KeyPath): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out ? `.${p}` : p;
  }
  return out || '(root)';
}

export function parseYamlSource(text: string, file: string, options: YamlSourceOptions = {}): YamlSource {
  const maxBytes = options.maxBytes ?? 1024 * 1024;
  const size = Buffer.byteLength(text, 'utf8');
  if (size > maxBytes) throw new MsgflowError('YAML_TOO_LARGE', { file, size, limit: maxBytes });
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number) => {
    const p = lineCounter.linePos(offset);
    return { line: p.line, col: p.col };
  };
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const { line, col } = at(e.pos[0]);
    throw new MsgflowError('YAML_SYNTAX', { location: `${file}:${line}:${col}`, reason: firstLine(e.message) });
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: options.maxAliasCount ?? 100 });
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    if (/alias/i.test(msg)) throw new MsgflowError('YAML_TOO_MANY_ALIASES', { file }, { cause: err });
    throw new MsgflowError('YAML_SYNTAX', { location: `${file}:1:1`, reason: firstLine(msg) }, { cause: err });
  }
  const position = (path: KeyPath, opts: { key?: boolean } = {}) => {
    const offset = nodeOffset(doc, path, opts.key ?? false);
    return at(offset);
  };
  return {
    file,
    value,
    position,
    locate: (path, opts) => {
      const { line, col } = position(path, opts);
      return `${file}:${line}:${col}`;
    },
  };
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.trim();
}

/** Offset of the deepest node on `path` that exists; with `key`, of the last key itself. */
function nodeOffset(doc: Document, path: KeyPath, key: boolean): number {
  let node: unknown = doc.contents;
  let best = rangeStart(node) ?? 0;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i]!;
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) return best;
      const keyStart = rangeStart(pair.key);
      if (last && key && keyStart !== undefined) return keyStart;
      node = pair.value;
      best = rangeStart(node) ?? keyStart ?? best;
    } else if (isSeq(node) && typeof seg === 'number') {
      node = node.items[seg];
      if (node === undefined) return best;
      best = rangeStart(node) ?? best;
    } else {
      return best;
    }
  }
  return best;
}

function rangeStart(node: unknown): number | undefined {
  const range = (node as Node | null | undefined)?.range;
  return range ? range[0] : undefined;
}
