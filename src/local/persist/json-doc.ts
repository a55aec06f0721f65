/**
 * A small JSON document kept by lowdb (`Low` + `JSONFile`): contacts,
 * phonebook, account-check cache. lowdb's JSONFile writes through steno, i.e.
 * to a temp file then rename, so a `kill -9` leaves either the old or the new
 * document, never a torn one.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';

export async function openJsonDoc<T>(file: string, defaults: T): Promise<Low<T>> {
  await mkdir(path.dirname(file), { recursive: true });
  const db = new Low<T>(new JSONFile<T>(file), defaults);
  await db.read();
  // lowdb keeps the defaults object itself; copy it so two documents never share state.
  if (db.data === defaults) db.data = structuredClone(defaults);
  return db;
}
