/**
 * A small JSON document kept by lowdb (`Low` + `JSONFile`): instance settings
 * such as meta.json. Collections that grow with the user's data are keyed
 * logs instead (keyed-log.ts). lowdb's JSONFile writes through steno, i.e. to
 * a temp file then rename, so a `kill -9` leaves either the old or the new
 * document, never a torn one.
 *
 * The document is checked against its shape when opened: a file holding
 * `null` or another shape refuses the start, naming the file and the key,
 * instead of being taken as empty.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import type { z } from 'zod';
import { readLegacyDoc } from './legacy-doc.js';

export async function openJsonDoc<S extends z.ZodType>(
  file: string,
  shown: string,
  schema: S,
  defaults: z.output<S>,
): Promise<Low<z.output<S>>> {
  await mkdir(path.dirname(file), { recursive: true });
  const found = await readLegacyDoc(file, shown, schema);
  const db = new Low<z.output<S>>(new JSONFile<z.output<S>>(file), defaults);
  // A copy of the defaults, so two documents never share state.
  db.data = found ?? structuredClone(defaults);
  return db;
}
