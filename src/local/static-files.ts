/**
 * `local.staticDir` served read-only under `/_local/static/`: a place for demo
 * and test files that sendFileByUrl can fetch with no internet (the example
 * broadcast sends public/brochure.pdf this way). Paths cannot leave the folder,
 * and names starting with a dot are never served.
 */
import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { extensionOf, typeForExtension } from './media/mime-table.js';
import type { LocalFileBody, LocalResponse } from './types.js';

/** The file under `root` at `segments`, or undefined (missing, a folder, or outside root). */
export async function openStatic(root: string, segments: readonly string[]): Promise<LocalResponse | undefined> {
  // Dotfiles and dot-folders (.env, .git/...) are never served.
  if (segments.length === 0 || segments.some((s) => s === '' || s.startsWith('.') || s.includes('\0') || /[\\/]/.test(s))) {
    return undefined;
  }
  let file: string;
  let realRoot: string;
  try {
    realRoot = await realpath(root);
    // realpath resolves symlinks, so a link pointing outside the folder is refused too.
    file = await realpath(path.join(realRoot, ...segments));
  } catch {
    return undefined;
  }
  if (!file.startsWith(realRoot + path.sep)) return undefined;
  const st = await stat(file).catch(() => undefined);
  if (!st?.isFile()) return undefined;
  const fileName = segments[segments.length - 1]!;
  const mimeType = typeForExtension(extensionOf(fileName))?.mimeType ?? 'application/octet-stream';
  const body: LocalFileBody = { kind: 'file', stream: createReadStream(file), size: st.size, mimeType, fileName };
  return {
    status: 200,
    headers: { 'content-type': mimeType, 'content-length': String(st.size), 'cache-control': 'no-cache' },
    body,
  };
}
