/**
 * Tokenizer of the flow expression language (the text inside `${{ ... }}`).
 * Hand-written so that flow text is never handed to eval, Function or vm.
 */
import { ExpressionError } from './errors.js';

export type TokenType = 'num' | 'str' | 'ident' | 'punct' | 'eof';

export interface Token {
  type: TokenType;
  /** Punctuator text, identifier name, or the decoded string/number. */
  value: string | number;
  /** 0-based offset in the expression. */
  pos: number;
}

/** Longest first, so `<=` wins over `<`. */
const PUNCTUATORS = [
  '=>',
  '==',
  '!=',
  '<=',
  '>=',
  '&&',
  '||',
  '??',
  '.',
  '[',
  ']',
  '(',
  ')',
  ',',
  '!',
  '<',
  '>',
  '+',
  '-',
  '*',
  '/',
  '%',
  '?',
  ':',
];

/** Bounds the work a single expression can cause (flows come from files people edit, not from attackers, but a runaway is still a bug). */
export const MAX_EXPRESSION_LENGTH = 4096;

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '0': '\0' };

export function tokenize(src: string): Token[] {
  if (src.length > MAX_EXPRESSION_LENGTH) {
    throw new ExpressionError(src.slice(0, 40) + '...', 0, `expression is longer than ${MAX_EXPRESSION_LENGTH} characters`);
  }
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const start = i;
    if (isDigit(c)) {
      while (i < src.length && isDigit(src[i]!)) i++;
      if (src[i] === '.' && isDigit(src[i + 1] ?? '')) {
        i++;
        while (i < src.length && isDigit(src[i]!)) i++;
      }
      if (isIdentStart(src[i] ?? '')) throw new ExpressionError(src, i, `unexpected '${src[i]}' after a number`);
      out.push({ type: 'num', value: Number(src.slice(start, i)), pos: start });
      continue;
    }
    if (isIdentStart(c)) {
      while (i < src.length && isIdentPart(src[i]!)) i++;
      out.push({ type: 'ident', value: src.slice(start, i), pos: start });
      continue;
    }
    if (c === "'" || c === '"') {
      i++;
      let s = '';
      for (;;) {
        if (i >= src.length) throw new ExpressionError(src, start, 'unterminated string');
        const d = src[i]!;
        if (d === c) {
          i++;
          break;
        }
        if (d === '\\') {
          const e = src[i + 1];
          if (e === undefined || !(e in ESCAPES)) throw new ExpressionError(src, i, `unknown escape '\\${e ?? ''}'`);
          s += ESCAPES[e];
          i += 2;
          continue;
        }
        s += d;
        i++;
      }
      out.push({ type: 'str', value: s, pos: start });
      continue;
    }
    const p = PUNCTUATORS.find((q) => src.startsWith(q, i));
    if (!p) {
      const hint = c === '=' ? " (use '==' to compare)" : c === '&' || c === '|' ? ` (use '${c}${c}')` : '';
      throw new ExpressionError(src, i, `unexpected character '${c}'${hint}`);
    }
    out.push({ type: 'punct', value: p, pos: start });
    i += p.length;
  }
  out.push({ type: 'eof', value: '', pos: src.length });
  return out;
}

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

function isIdentStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}

function isIdentPart(c: string): boolean {
  return isIdentStart(c) || isDigit(c);
}
