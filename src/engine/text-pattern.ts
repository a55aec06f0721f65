/**
 * Text patterns: a notification trigger's `text:` and a dialog transition's
 * pattern are regular expressions matched case-insensitively. One rule for
 * compiling them, and one for saying why a pattern does not compile (the
 * flow checks report it at the pattern's position).
 */

/** The pattern as the matchers use it. */
export function textPattern(source: string): RegExp {
  return new RegExp(source, 'i');
}

/** Why a text pattern does not compile, or undefined. */
export function regexError(source: string): string | undefined {
  try {
    textPattern(source);
    return undefined;
  } catch (e) {
    // V8: "Invalid regular expression: /(stop/iu: Unterminated group" -> the reason only.
    const msg = e instanceof Error ? e.message : String(e);
    return msg.slice(msg.lastIndexOf(': ') + 2) || msg;
  }
}
