/**
 * Column layout of the CLI's list commands (`runs`, `sessions`, `alerts`,
 * `handovers`, `pauses`): each column as wide as its longest cell, two
 * spaces between columns, no trailing blanks.
 */

type Rows = readonly (readonly string[])[];

/** The width of each of the first `count` columns: its longest cell, header included. */
export function columnWidths(header: readonly string[], rows: Rows, count = header.length): number[] {
  return header.slice(0, count).map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
}

/** A formatter of rows, its widths taken from `header` and `rows`. */
export function columnFormat(header: readonly string[], rows: Rows): (row: readonly string[]) => string {
  const widths = columnWidths(header, rows);
  return (row) =>
    row
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
}

/** `header` and `rows` laid out in columns, one line each. */
export function columns(header: readonly string[], rows: Rows): string[] {
  const fmt = columnFormat(header, rows);
  return [fmt(header), ...rows.map(fmt)];
}
