/**
 * The sends of a broadcast accepted but not seen sent yet, per sender: the
 * send queue ahead of a lost send (reconciliation's queue allowance counts
 * them). With the service's queue slower than the job, a campaign of 100,000
 * leaves nearly all of them here, so each is two slots of two packed arrays
 * (its idMessage and when it was sent), never an object per send: what a
 * send was to whom is read from the service's message and the record.
 */

/** One sender's unobserved sends, in the order they were added. */
interface Queue {
  ids: string[];
  /** When each was sent (ms), beside its idMessage: a packed array of doubles. */
  at: number[];
}

/** The unobserved sends of a job, by sender (`K`: how the job names its senders). */
export class UnobservedSends<K> {
  private readonly bySender = new Map<K, Queue>();

  /** A send of `sender` accepted as `idMessage` at `sentAt`, not seen sent yet. */
  add(sender: K, idMessage: string, sentAt: number): void {
    let q = this.bySender.get(sender);
    if (!q) this.bySender.set(sender, (q = { ids: [], at: [] }));
    q.ids.push(idMessage);
    q.at.push(sentAt);
  }

  /** The sender's unobserved idMessages, and when the oldest was sent (undefined: none). */
  of(sender: K): { ids: readonly string[]; oldest?: number } {
    const q = this.bySender.get(sender);
    if (!q || q.ids.length === 0) return { ids: [] };
    let oldest = q.at[0]!;
    for (const t of q.at) if (t < oldest) oldest = t;
    return { ids: q.ids, oldest };
  }

  /** Forgets the sender's sends in `seen` (seen sent, or no longer the record's). */
  drop(sender: K, seen: ReadonlySet<string>): void {
    const q = this.bySender.get(sender);
    if (!q || seen.size === 0) return;
    let w = 0;
    for (let r = 0; r < q.ids.length; r++) {
      if (seen.has(q.ids[r]!)) continue;
      q.ids[w] = q.ids[r]!;
      q.at[w++] = q.at[r]!;
    }
    q.ids.length = w;
    q.at.length = w;
  }
}
