/**
 * Text for a terminal or a log file that may hold what others wrote (an
 * incoming message, a remote service's error text): its control characters
 * shown, not obeyed. A raw CR would let a message overwrite its own log line
 * with a forged one; ESC starts terminal sequences (colours, cursor moves,
 * OSC 52 clipboard writes); C1 and bidirectional controls reorder or hide
 * what is shown.
 */

/** C0 controls but newline and tab, DEL, C1, the Unicode line and paragraph separators, and the bidi embeddings, overrides and isolates. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\r': '\\r', '\b': '\\b', '\f': '\\f', '\v': '\\v', '\0': '\\0' };

function shown(c: string): string {
  const code = c.charCodeAt(0);
  if (NAMED[c]) return NAMED[c];
  // `\x1b` for C0, `\u009b` above: the second form is also a valid JSON escape, so escaping JSON text keeps it JSON.
  return code < 0x20 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * `text` with every control character written out: CR as `\r`, ESC as
 * `\x1b`, C1 and bidi controls as `\u009b`, `\u202e`. Newlines and tabs stay
 * (a log entry's continuation lines are indented by its writer). Applied to
 * JSON text it keeps it valid JSON: JSON already escapes C0, and the rest
 * become `\uXXXX` escapes of the same characters.
 *
 * @example escapeControl('hi\r\x1b]52;c;aGk=\x07') // 'hi\\r\\x1b]52;c;aGk=\\x07'
 */
export function escapeControl(text: string): string {
  return text.replace(CONTROL, shown);
}
