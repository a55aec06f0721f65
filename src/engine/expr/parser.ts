/**
 * Recursive-descent parser of the expression language. Grammar, loosest
 * binding first:
 *
 * ```
 * expr     := nullish ('?' expr ':' expr)?
 * nullish  := or ('??' or)*
 * or       := and ('||' and)*
 * and      := equality ('&&' equality)*
 * equality := compare (('==' | '!=') compare)*
 * compare  := sum (('<' | '<=' | '>' | '>=') sum)*
 * sum      := product (('+' | '-') product)*
 * product  := unary (('*' | '/' | '%') unary)*
 * unary    := ('!' | '-') unary | postfix
 * postfix  := primary ('.' name | '[' expr ']')*
 * primary  := number | string | true | false | null | root | param | fn '(' args ')' | '(' expr ')' | '[' items ']'
 * arg      := lambda | expr          (a lambda only where the function takes one)
 * lambda   := name '=>' expr | '(' name ')' '=>' expr
 * ```
 *
 * A lambda (`x => x.country == 'DE'`) is data for `filter`/`map`, not a
 * function value: it cannot be stored, returned or called by name, and its
 * parameter is visible only inside its body.
 *
 * Names are only the scope roots (`inputs`, `env`, `steps`, `item`,
 * `index`, `run`, `local`) and calls only the documented functions: anything else is
 * rejected here, when the flow is loaded, not when it runs.
 */
import { ExpressionError } from './errors.js';
import { functionNames, getFunction, lambdaFunctions } from './functions.js';
import { tokenize, type Token } from './tokenizer.js';
import { closest } from '../registry/suggest.js';

/** The names an expression may start from. */
export const SCOPE_ROOTS = [
  'inputs',
  'env',
  'steps',
  'item',
  'index',
  'run',
  'local',
  'event',
  'row',
  'session',
  'message',
  'value',
  'secrets',
] as const;
/** The roots only a conversation's templates read (engine/conversation): the session, the message, a validated value. */
export const DIALOG_ROOTS: readonly ScopeRoot[] = ['session', 'message', 'value'];
export type ScopeRoot = (typeof SCOPE_ROOTS)[number];

export type Node =
  | { type: 'literal'; value: string | number | boolean | null; pos: number }
  | { type: 'root'; name: ScopeRoot; pos: number }
  | { type: 'member'; object: Node; property: Node; pos: number }
  | { type: 'call'; name: string; args: Node[]; pos: number }
  | { type: 'array'; items: Node[]; pos: number }
  | { type: 'unary'; op: '!' | '-'; arg: Node; pos: number }
  | { type: 'binary'; op: string; left: Node; right: Node; pos: number }
  | { type: 'conditional'; test: Node; then: Node; otherwise: Node; pos: number }
  /** `x => body`: only as an argument of a function that takes one (filter, map). */
  | { type: 'lambda'; param: string; body: Node; pos: number }
  /** A lambda's parameter, read inside its body. */
  | { type: 'param'; name: string; pos: number };

const MAX_DEPTH = 64;

/** Parses one expression (the text inside `${{ }}`). Throws ExpressionError with the offset. */
export function parseExpression(text: string): Node {
  const p = new Parser(text, tokenize(text));
  if (p.peek().type === 'eof') throw new ExpressionError(text, 0, 'empty expression');
  const node = p.expr();
  const t = p.peek();
  if (t.type !== 'eof') throw new ExpressionError(text, t.pos, `unexpected ${describe(t)}`);
  return node;
}

const RESERVED = new Set(['true', 'false', 'null']);

class Parser {
  private i = 0;
  private depth = 0;
  /** Parameters of the lambdas being parsed, innermost last. */
  private params: string[] = [];
  constructor(
    private readonly src: string,
    private readonly tokens: Token[],
  ) {}

  peek(): Token {
    return this.tokens[this.i]!;
  }

  private at(k: number): Token {
    return this.tokens[Math.min(this.i + k, this.tokens.length - 1)]!;
  }

  private isArrow(k: number): boolean {
    const t = this.at(k);
    return t.type === 'punct' && t.value === '=>';
  }

  /** `x => ...` or `(x) => ...` starts here. */
  private lambdaAhead(): boolean {
    const t = this.peek();
    if (t.type === 'ident') return this.isArrow(1);
    return (
      t.type === 'punct' &&
      t.value === '(' &&
      this.at(1).type === 'ident' &&
      this.at(2).type === 'punct' &&
      this.at(2).value === ')' &&
      this.isArrow(3)
    );
  }

  private lambda(): Node {
    const start = this.peek();
    const paren = start.type === 'punct';
    if (paren) this.next();
    const nameTok = this.next();
    const name = nameTok.value as string;
    if (paren) this.next();
    this.next(); // =>
    if (RESERVED.has(name) || getFunction(name)) throw this.error(nameTok, `'${name}' cannot name a lambda parameter`);
    this.params.push(name);
    try {
      return { type: 'lambda', param: name, body: this.expr(), pos: start.pos };
    } finally {
      this.params.pop();
    }
  }

  private next(): Token {
    return this.tokens[this.i++]!;
  }

  private isPunct(...ops: string[]): boolean {
    const t = this.peek();
    return t.type === 'punct' && ops.includes(t.value as string);
  }

  private expect(op: string, what: string): Token {
    const t = this.peek();
    if (t.type !== 'punct' || t.value !== op) throw this.error(t, `expected '${op}' ${what}, got ${describe(t)}`);
    return this.next();
  }

  private error(t: Token, reason: string): ExpressionError {
    return new ExpressionError(this.src, t.pos, reason);
  }

  expr(): Node {
    if (++this.depth > MAX_DEPTH) throw this.error(this.peek(), `expression nests deeper than ${MAX_DEPTH} levels`);
    try {
      const test = this.binary(0);
      if (!this.isPunct('?')) return test;
      const q = this.next();
      const then = this.expr();
      this.expect(':', "in 'a ? b : c'");
      const otherwise = this.expr();
      return { type: 'conditional', test, then, otherwise, pos: q.pos };
    } finally {
      this.depth--;
    }
  }

  private static readonly LEVELS: string[][] = [['??'], ['||'], ['&&'], ['==', '!='], ['<', '<=', '>', '>='], ['+', '-'], ['*', '/', '%']];

  private binary(level: number): Node {
    if (level >= Parser.LEVELS.length) return this.unary();
    let left = this.binary(level + 1);
    while (this.isPunct(...Parser.LEVELS[level]!)) {
      const op = this.next();
      const right = this.binary(level + 1);
      left = { type: 'binary', op: op.value as string, left, right, pos: op.pos };
    }
    return left;
  }

  private unary(): Node {
    if (this.isPunct('!', '-')) {
      const op = this.next();
      if (++this.depth > MAX_DEPTH) throw this.error(op, `expression nests deeper than ${MAX_DEPTH} levels`);
      try {
        return { type: 'unary', op: op.value as '!' | '-', arg: this.unary(), pos: op.pos };
      } finally {
        this.depth--;
      }
    }
    return this.postfix();
  }

  private postfix(): Node {
    let node = this.primary();
    for (;;) {
      if (this.isPunct('.')) {
        const dot = this.next();
        const name = this.next();
        if (name.type !== 'ident') throw this.error(name, `expected a property name after '.', got ${describe(name)}`);
        node = { type: 'member', object: node, property: { type: 'literal', value: name.value as string, pos: name.pos }, pos: dot.pos };
      } else if (this.isPunct('[')) {
        const open = this.next();
        const property = this.expr();
        this.expect(']', 'to close the index');
        node = { type: 'member', object: node, property, pos: open.pos };
      } else if (this.isPunct('(')) {
        throw this.error(
          this.peek(),
          `method calls are not supported: call a function by name, e.g. lower(x) (functions: ${functionNames().join(', ')})`,
        );
      } else {
        return node;
      }
    }
  }

  private primary(): Node {
    const t = this.next();
    if (t.type === 'num' || t.type === 'str') return { type: 'literal', value: t.value, pos: t.pos };
    if (t.type === 'ident') {
      const name = t.value as string;
      if (name === 'true' || name === 'false') return { type: 'literal', value: name === 'true', pos: t.pos };
      if (name === 'null') return { type: 'literal', value: null, pos: t.pos };
      if (this.isPunct('(')) return this.call(t);
      if (this.isPunct('=>'))
        throw this.error(t, `a lambda ('${name} => ...') is only allowed as an argument of ${lambdaFunctions().join(', ')}`);
      // A lambda's parameter shadows a scope root of the same name (`item => item.phone`).
      if (this.params.includes(name)) return { type: 'param', name, pos: t.pos };
      if ((SCOPE_ROOTS as readonly string[]).includes(name)) return { type: 'root', name: name as ScopeRoot, pos: t.pos };
      const hint = closest(name, [...SCOPE_ROOTS, ...functionNames()]);
      throw this.error(
        t,
        `unknown name '${name}'${hint ? ` (did you mean '${hint}'?)` : ''}; an expression starts from ${SCOPE_ROOTS.join(', ')}`,
      );
    }
    if (t.type === 'punct' && t.value === '(') {
      if (this.peek().type === 'ident' && this.at(1).type === 'punct' && this.at(1).value === ')' && this.isArrow(2)) {
        throw this.error(t, `a lambda is only allowed as an argument of ${lambdaFunctions().join(', ')}`);
      }
      const inner = this.expr();
      this.expect(')', 'to close the parenthesis');
      return inner;
    }
    if (t.type === 'punct' && t.value === '[') {
      const items: Node[] = [];
      if (!this.isPunct(']')) {
        do items.push(this.expr());
        while (this.isPunct(',') && this.next());
      }
      this.expect(']', 'to close the array');
      return { type: 'array', items, pos: t.pos };
    }
    throw this.error(t, `unexpected ${describe(t)}`);
  }

  private call(nameTok: Token): Node {
    const name = nameTok.value as string;
    const def = getFunction(name);
    if (!def) {
      const hint = closest(name, functionNames());
      throw this.error(nameTok, `unknown function '${name}'${hint ? ` (did you mean '${hint}'?)` : ''}`);
    }
    this.next(); // (
    const args: Node[] = [];
    const lambdas = def.lambdaArgs ?? [];
    if (!this.isPunct(')')) {
      do {
        const idx = args.length;
        const argTok = this.peek();
        if (this.lambdaAhead()) {
          if (!lambdas.includes(idx)) throw this.error(argTok, `${name}() takes no lambda as argument ${idx + 1}`);
          args.push(this.lambda());
        } else {
          if (lambdas.includes(idx))
            throw this.error(argTok, `${name}() needs a lambda as argument ${idx + 1}, e.g. ${name}(list, x => x.country == 'DE')`);
          args.push(this.expr());
        }
      } while (this.isPunct(',') && this.next());
    }
    this.expect(')', `to close ${name}(`);
    if (args.length < def.minArgs || args.length > def.maxArgs) {
      const want = def.minArgs === def.maxArgs ? `${def.minArgs}` : `${def.minArgs} to ${def.maxArgs}`;
      throw this.error(nameTok, `${name}() takes ${want} argument${want === '1' ? '' : 's'}, got ${args.length}`);
    }
    return { type: 'call', name, args, pos: nameTok.pos };
  }
}

function describe(t: Token): string {
  if (t.type === 'eof') return 'end of expression';
  if (t.type === 'str') return 'a string';
  if (t.type === 'num') return `number ${t.value}`;
  return `'${t.value}'`;
}
