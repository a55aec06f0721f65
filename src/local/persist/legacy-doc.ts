/**
 * JSON documents read whole: the instance settings (json-doc.ts), and the
 * documents of earlier releases (contacts.json, phonebook.json, checks.json:
 * whole-file lowdb JSON), which are read once, converted to the keyed logs
 * and moved aside as `<name>.migrated`, so no user loses local data.
 * A document of the wrong shape refuses the start, naming the file and the
 * key, rather than being taken as empty.
 */
import { readFile, rename } from 'node:fs/promises';
import type { z } from 'zod';
import { MsgflowError } from '../../api/errors.js';

/**
 * The parsed document, or undefined when the file does not exist.
 * @throws MsgflowError LOCAL_DATA_INVALID naming the file and the key
 */
export async function readLegacyDoc<S extends z.ZodType>(file: string, shown: string, schema: S): Promise<z.output<S> | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new MsgflowError(
      'LOCAL_DATA_INVALID',
      { file: shown, location: '', reason: `cannot be read (${(e as Error).message})` },
      { cause: e },
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new MsgflowError(
      'LOCAL_DATA_INVALID',
      { file: shown, location: '', reason: `not valid JSON (${(e as Error).message})` },
      { cause: e },
    );
  }
  return parseDoc(value, shown, schema);
}

/**
 * Checks a JSON document against its shape.
 * @throws MsgflowError LOCAL_DATA_INVALID naming the file and the key
 */
export function parseDoc<S extends z.ZodType>(value: unknown, shown: string, schema: S): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const key = issue.path.map(String).join('.');
  throw new MsgflowError('LOCAL_DATA_INVALID', {
    file: shown,
    location: key ? ` key '${key}'` : '',
    reason: `${issue.message}; the file was not changed, fix or move it away`,
  });
}

/** Moves a converted document aside (kept for the user, never read again). */
export async function retireLegacyDoc(file: string): Promise<void> {
  await rename(file, `${file}.migrated`).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw e;
  });
}
