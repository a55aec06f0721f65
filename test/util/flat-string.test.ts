import { describe, expect, it } from 'vitest';
import { flatString } from '../../src/util/flat-string.js';

describe('flatString', () => {
  it('gives back the same text for any string: quotes, escapes, NUL, lone surrogates, astral characters', () => {
    const texts = ['', '79001112233@c.us', 'say "hi"\\n', 'a\u0000b', '\ud800 alone', 'x\udfff', '😀 ok', '\u2028\u2029', 'é'.repeat(1000)];
    for (const t of texts) expect(flatString('' + t.slice(0, 1) + t.slice(1))).toBe(t);
  });
});
