/**
 * Reads the complete lines appended to a file since the last read, so that a
 * process can follow a log other processes append to. Synchronous on purpose:
 * the reads come from the page cache and take microseconds, far less than a
 * round trip through libuv's thread pool, and a caller's index never sees a
 * half-applied tail.
 */
import { fstatSync, readSync } from 'node:fs';

/** One complete line: bytes [start, end) of `buf` (newline excluded), at `offset` in the file. */
export type LineHandler = (buf: Buffer, start: number, end: number, offset: number) => void;

const CHUNK = 1 << 20;

export class LineTail {
  /** Bytes of the file consumed: everything up to and including the last complete line read. */
  consumed = 0;

  constructor(readonly fd: number) {}

  /**
   * Hands every complete line between `consumed` and the end of the file to
   * `onLine`; an incomplete last line (a write in flight, or torn by a crash)
   * stays for a later call. Returns false when the file was unlinked (a
   * compaction retired it), so the caller reloads.
   */
  pull(onLine: LineHandler): boolean {
    const st = fstatSync(this.fd);
    let size = st.size;
    if (this.consumed >= size) return st.nlink > 0;
    // Sized to what is new (a tail is usually a few lines): no megabyte kept per open log.
    let buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(4096, size - this.consumed)));
    while (this.consumed < size) {
      const want = Math.min(buf.length, size - this.consumed);
      const got = readSync(this.fd, buf, 0, want, this.consumed);
      if (got === 0) break;
      let start = 0;
      for (;;) {
        const nl = buf.indexOf(0x0a, start);
        if (nl === -1 || nl >= got) break;
        if (nl > start) onLine(buf, start, nl, this.consumed + start);
        start = nl + 1;
      }
      if (start === 0) {
        // No newline in a full buffer: a line longer than the buffer. Grow and retry;
        // at the end of the file it is an incomplete line: leave it.
        if (got < buf.length) break;
        buf = Buffer.allocUnsafe(buf.length * 2);
        continue;
      }
      this.consumed += start;
      if (this.consumed >= size) size = fstatSync(this.fd).size;
    }
    return st.nlink > 0;
  }
}
