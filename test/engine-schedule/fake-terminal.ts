/** Test helper: a fake TTY stream that captures writes and interprets cursor escape sequences. */
/** A terminal: rows of text, a cursor, and the few sequences readline and cli-progress write. */
export class FakeTerminal {
  rows: string[] = [''];
  row = 0;
  col = 0;
  writes: string[] = [];
  readonly isTTY = true;
  constructor(readonly columns = 120) {}
  write(chunk: string): boolean {
    this.writes.push(chunk);
    let i = 0;
    while (i < chunk.length) {
      const c = chunk[i]!;
      if (c === '\x1b') {
        const m = /^\x1b(?:\[(\??)(\d*)(?:;(\d*))?([A-Za-z])|([78]))/.exec(chunk.slice(i));
        if (!m) throw new Error(`unknown escape at ${JSON.stringify(chunk.slice(i, i + 8))}`);
        i += m[0].length;
        if (m[5] || m[1] === '?') continue;
        const n = m[2] === '' ? undefined : Number(m[2]);
        switch (m[4]) {
          case 'A':
            this.row = Math.max(0, this.row - (n ?? 1));
            break;
          case 'B':
            this.moveDown(n ?? 1);
            break;
          case 'C':
            this.col += n ?? 1;
            break;
          case 'D':
            this.col = Math.max(0, this.col - (n ?? 1));
            break;
          case 'G':
            this.col = (n ?? 1) - 1;
            break;
          case 'K': {
            const line = this.rows[this.row]!;
            if ((n ?? 0) === 0) this.rows[this.row] = line.slice(0, this.col);
            else if (n === 1) this.rows[this.row] = ' '.repeat(this.col) + line.slice(this.col);
            else this.rows[this.row] = '';
            break;
          }
          case 'J':
            this.rows[this.row] = this.rows[this.row]!.slice(0, this.col);
            this.rows.length = this.row + 1;
            break;
          default:
            throw new Error(`unhandled escape ${m[0]}`);
        }
        continue;
      }
      i++;
      if (c === '\n') {
        this.moveDown(1);
        this.col = 0;
        continue;
      }
      if (c === '\r') {
        this.col = 0;
        continue;
      }
      const line = this.rows[this.row]!.padEnd(this.col, ' ');
      this.rows[this.row] = line.slice(0, this.col) + c + line.slice(this.col + 1);
      this.col++;
    }
    return true;
  }
  private moveDown(n: number) {
    this.row += n;
    while (this.rows.length <= this.row) this.rows.push('');
  }
  /** The screen without trailing empty rows. */
  get screen(): string[] {
    const r = this.rows.map((l) => l.trimEnd());
    while (r.length && r.at(-1) === '') r.pop();
    return r;
  }
}
