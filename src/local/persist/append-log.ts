/**
 * The local service's JSON Lines files (send queue, chat logs,
 * notifications; keyed-log.ts for contacts and account checks) on the one
 * append-only log of src/util/append-log.ts, which says what survives a
 * crash. The service owns its data directory (one process, see the data
 * lock), so a line that is not a record can only be damage: these logs
 * `refuse` it, and the start fails naming the file and line
 * (LOCAL_DATA_INVALID) rather than dropping data. A torn last line (the
 * process was killed mid-append) is skipped and cut off before the next
 * append: its write was never acknowledged.
 */
import { MsgflowError } from '../../api/errors.js';
import { AppendLog as Log, CorruptLineError, jsonRecords, type LineReader } from '../../util/append-log.js';

/** A local data file of JSON records. */
export class AppendLog<T> {
  private readonly log: Log;

  /** `shown` is the file as named in errors (the instance id replaced by a placeholder). */
  constructor(file: string, shown = file) {
    this.log = localLog(file, shown);
  }

  /**
   * Every record of the file, or null when it does not exist.
   * @throws MsgflowError LOCAL_DATA_INVALID naming the file and line of a corrupt record
   */
  async read(): Promise<T[] | null> {
    const out: T[] = [];
    const exists = await readLocal(
      this.log,
      jsonRecords<T>((r) => void out.push(r)),
    );
    return exists ? out : null;
  }

  /** Appends records; resolves once they are in the file. */
  append(...records: T[]): Promise<void> {
    return this.log.appendRecords(records);
  }

  /** Replaces the whole file atomically with these records (compaction). */
  write(records: T[]): Promise<void> {
    return this.log.rewrite(function* () {
      for (const r of records) yield JSON.stringify(r) + '\n';
    });
  }
}

/**
 * The log of a local data file: one writer, corrupt lines refused, and each
 * write started as soon as the request handler yields (`at-once`: an answer
 * waits for its line only, not for the rest of the event loop's turn).
 */
export function localLog(file: string, shown: string): Log {
  return new Log(file, { corrupt: 'refuse', name: shown, commit: 'at-once' });
}

/**
 * Reads a local data file line by line; false when it does not exist.
 * @throws MsgflowError LOCAL_DATA_INVALID naming the file and line of a corrupt one, or the file when it cannot be read
 */
export async function readLocal(log: Log, onLine: LineReader): Promise<boolean> {
  try {
    return (await log.scan(onLine)) !== null;
  } catch (e) {
    if (e instanceof CorruptLineError) throw corrupt(log.name, e.line, e.reason);
    if (typeof (e as NodeJS.ErrnoException).syscall !== 'string') throw e;
    throw new MsgflowError(
      'LOCAL_DATA_INVALID',
      { file: log.name, location: '', reason: `cannot be read (${(e as Error).message})` },
      { cause: e },
    );
  }
}

/** A corrupt line of a local data file, named by file and line. */
export function corrupt(file: string, line: number, reason: string): MsgflowError {
  return new MsgflowError('LOCAL_DATA_INVALID', { file, location: `:${line}`, reason });
}

/** A record of a local data file that does not say what the service wrote; `where` is `file:line` or `file key '...'`. */
export function corruptAt(where: string, reason: string): MsgflowError {
  return new MsgflowError('LOCAL_DATA_INVALID', { file: where, location: '', reason });
}
