/**
 * Reads a flow input data file: CSV (a header row, one object per line),
 * JSON, JSON Lines or YAML, chosen by extension. CSV values stay strings
 * (phone numbers must not lose leading digits or precision); the API schemas
 * accept digit strings where numbers are expected.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { MsgflowError } from '../../api/errors.js';
import { parseYamlSource } from '../../util/yaml-source.js';

export interface DataFileOptions {
  /** Refuse bigger files. @default 268435456 (256 MiB) */
  maxBytes?: number;
}

export const DATA_FILE_EXTENSIONS = ['.csv', '.json', '.jsonl', '.ndjson', '.yaml', '.yml'] as const;

function fail(file: string, reason: string, cause?: unknown): MsgflowError {
  return new MsgflowError('DATA_FILE_INVALID', { file, reason }, cause === undefined ? {} : { cause });
}

export async function readDataFile(file: string, options: DataFileOptions = {}): Promise<unknown> {
  const ext = path.extname(file).toLowerCase();
  if (!(DATA_FILE_EXTENSIONS as readonly string[]).includes(ext)) {
    throw fail(file, `unsupported data file type '${ext || '(none)'}': use ${DATA_FILE_EXTENSIONS.join(', ')}`);
  }
  const maxBytes = options.maxBytes ?? 256 * 1024 * 1024;
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (e) {
    throw fail(file, 'data file not found', e);
  }
  if (size > maxBytes) throw fail(file, `${size} bytes is more than the ${maxBytes} bytes a data file may have`);
  let text = await readFile(file, 'utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  switch (ext) {
    case '.csv':
      try {
        return parseCsv(text, { columns: true, skip_empty_lines: true, trim: true, relax_column_count: false });
      } catch (e) {
        throw fail(file, `bad CSV: ${(e as Error).message}`, e);
      }
    case '.json':
      try {
        return JSON.parse(text);
      } catch (e) {
        throw fail(file, `bad JSON: ${(e as Error).message}`, e);
      }
    case '.jsonl':
    case '.ndjson':
      return text
        .split('\n')
        .map((line, i) => [line.trim(), i] as const)
        .filter(([line]) => line !== '')
        .map(([line, i]) => {
          try {
            return JSON.parse(line);
          } catch (e) {
            throw fail(`${file}:${i + 1}`, `bad JSON line: ${(e as Error).message}`, e);
          }
        });
    default:
      // Same protections as flow files (alias bombs), with the data-file size limit.
      return parseYamlSource(text, file, { maxBytes }).value;
  }
}
