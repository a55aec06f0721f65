/** Polls `cond` until true (event-loop turns, not a timing assertion); throws after `limitMs`. */
export async function waitFor(cond: () => boolean, limitMs = 5000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > limitMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 2));
  }
}
