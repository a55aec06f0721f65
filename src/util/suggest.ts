/**
 * "Did you mean" for action names, keys, functions and identifiers: the
 * closest candidate by edit distance, if it is close enough to be a typo.
 */

/** Levenshtein distance, case-insensitive (case slips count as typos). */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  if (s === t) return 0;
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const cur = [i];
    for (let j = 1; j <= t.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (s[i - 1] === t[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[t.length]!;
}

/**
 * The candidate closest to `name`, when within a third of its length (at
 * least 2 edits); a candidate that contains `name` or ends with it
 * (`bulk` -> `checkAccount.bulk`) counts too.
 *
 * @example closest('chekAccount', ['checkAccount', 'log']) // 'checkAccount'
 */
export function closest(name: string, candidateList: Iterable<string>): string | undefined {
  // Materialised: an iterator (Map.keys()) would be spent by the first pass.
  const candidates = [...candidateList];
  let best: string | undefined;
  let bestD = Infinity;
  const limit = Math.max(2, Math.floor(name.length / 3));
  for (const c of candidates) {
    const d = editDistance(name, c);
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  if (best !== undefined && bestD <= limit) return best;
  if (name.length >= 3) {
    const lower = name.toLowerCase();
    for (const c of candidates) if (c.toLowerCase().endsWith(`.${lower}`) || c.toLowerCase().includes(lower)) return c;
  }
  return undefined;
}

/** ` (did you mean 'x'?)` or ''. */
export function didYouMean(name: string, candidates: Iterable<string>): string {
  const c = closest(name, candidates);
  return c === undefined ? '' : ` (did you mean '${c}'?)`;
}
