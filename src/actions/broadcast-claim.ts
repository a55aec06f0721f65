/**
 * One run at a time sends a campaign. Its recipients' records are shared by
 * every run of the campaign (by name, on the flow's instance): two runs
 * reading a recipient's record at the same moment would both send to it.
 * The engine lets one run of a flow live at a time; a run of another flow
 * sending the same campaign (or of the same flow in a process that does not
 * share the concurrency group) takes the campaign's claim first
 * (ActionContext.claim: a store lease kept with the run's own, checked before
 * each send), and one that finds it held waits, durably, until the holder is
 * done; then its recipients' records say what was sent already.
 */
import type { ActionContext } from '../engine/action.js';

/** How long one wait for the claim lasts before it is asked again (it is also asked every recheck while waiting). */
const CLAIM_WAIT_MS = 60_000;

/** Runs `send` holding the campaign's claim (a campaign-less broadcast keeps its records per run: nothing to share). */
export async function sendingAlone<T>(ctx: ActionContext, campaign: string | undefined, send: () => Promise<T>): Promise<T> {
  if (campaign === undefined || ctx.run.dryRun || !ctx.claim) return send();
  const name = `campaign:${ctx.instance.identity}:${campaign}`;
  for (let said = false; ; said = true) {
    const r = await ctx.claim(name);
    if (r.ok) break;
    if (!said) ctx.logger.info(`campaign ${campaign} is being sent by ${r.holder}: this run waits until that one is done`);
    const until = ctx.clock.now() + CLAIM_WAIT_MS;
    await ctx.wait({
      until,
      reason: `campaign ${campaign} is being sent by ${r.holder}`,
      key: `campaign-claim-${until}`,
      lifted: async () => (await ctx.claim!(name)).ok,
    });
  }
  try {
    return await send();
  } finally {
    await ctx.release?.(name);
  }
}
