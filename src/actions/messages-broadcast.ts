/**
 * `messages.broadcast`: one message of any kind to many chats through the
 * instance's send queue, exactly once per recipient (broadcast-core.ts), with
 * per-recipient templates (`${{ row.<field> }}`), A/B variants by weight
 * (each recipient's kept in its record), and recipient time (its own hours in
 * its own zone, recipient-time.ts). files.broadcast is its preset for a file.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { z } from 'zod';
import { FlowError } from '../api/errors.js';
import { defineAction, type ActionContext, type ConfigNameRef } from '../engine/action.js';
import { broadcastFields, runBroadcast, windowWait, type BroadcastSpec, type BroadcastSummary } from './broadcast-core.js';
import { MessageSchema, pickVariant, prepareMessage, VariantSchema, type MessageInput, type Variant } from './message-content.js';
import { RecipientTimeSchema } from './recipient-time.js';
import { GuardSchema } from './broadcast-pool.js';
import { resolvePool, StepPoolSchema, type Pool } from '../util/pool.js';
import { fileField, itemsField, recordsFrom } from './kit/inputs.js';
import { duration } from './duration.js';

export const MESSAGES_BROADCAST = 'messages.broadcast';

export const MessagesBroadcastInput = z
  .strictObject({
    file: fileField('recipients'),
    recipients: itemsField('recipients: phone numbers, chat IDs, or records with phone or chatId plus any fields the message uses'),
    message: MessageSchema.optional().describe(
      "The message, evaluated per recipient: `${{ row.<field> }}` reads the recipient's row. Exactly one of text, file, upload, poll, location, contact, buttons.",
    ),
    variants: z
      .array(VariantSchema)
      .min(1)
      .max(26)
      .optional()
      .describe(
        'A/B variants instead of one message: [{ name, weight, message }]; each recipient gets one, drawn by weight once and kept.',
      ),
    recipientTime: RecipientTimeSchema.optional(),
    replyWindow: duration(
      'Replied, in the funnel: an incoming message from the recipient within this long after the send (recorded by the notification consumer of msgflow start / msgflow test). @default 3d',
    ).default(3 * 86_400_000),
    pool: StepPoolSchema.optional(),
    guard: GuardSchema.optional(),
    ...broadcastFields,
  })
  .refine(...recordsFrom('file', 'recipients'))
  .refine((v) => (v.message === undefined) !== (v.variants === undefined), { error: 'give message or variants, not both' })
  .refine((v) => new Set((v.variants ?? []).map((x) => x.name)).size === (v.variants ?? []).length, { error: 'variant names must differ' })
  .describe('Sends one message of any kind to many chats through the send queue, exactly once per recipient, and follows the statuses.');

export type MessagesBroadcastInput = z.output<typeof MessagesBroadcastInput>;

/** The names of config.yaml a step's `pool:` as written refers to: a pool (`pool: <name>`, `use:`), its instances. */
function poolNames(w: Readonly<Record<string, unknown>>): ConfigNameRef[] {
  const p = w.pool;
  if (typeof p === 'string') return [{ path: ['pool'], kind: 'pool', name: p }];
  if (p === null || typeof p !== 'object') return [];
  const { use, instances } = p as { use?: unknown; instances?: unknown };
  const out: ConfigNameRef[] = typeof use === 'string' ? [{ path: ['pool', 'use'], kind: 'pool', name: use }] : [];
  if (Array.isArray(instances))
    instances.forEach((name, i) => typeof name === 'string' && out.push({ path: ['pool', 'instances', i], kind: 'instance', name }));
  return out;
}

/** The pool the step sends from: its own, or config.yaml's it names (ctx.pools), with the step's changes. */
function poolOf(ctx: ActionContext, input: MessagesBroadcastInput) {
  if (input.pool === undefined) return undefined;
  const pool = resolvePool(input.pool, ctx.pools ?? {});
  if (typeof pool === 'string') throw new FlowError('ACTION_INPUT_INVALID', { action: MESSAGES_BROADCAST, field: 'pool', reason: pool });
  return pool;
}
export type MessagesBroadcastSummary = BroadcastSummary;

export const MESSAGES_REPORT_COLUMNS = [
  'chatId',
  'where',
  'variant',
  'kind',
  'outcome',
  'idMessage',
  'status',
  'sentAt',
  'deliveredAt',
  'readAt',
  'repliedAt',
  'instance',
  'reconciled',
  'resent',
  'text',
  'error',
] as const;

/**
 * An `upload:` message as a file by link: the file is uploaded once (uploadFile)
 * and its link kept in the run's state, so a resumed run sends the same link.
 */
async function uploaded(ctx: ActionContext, message: MessageInput, where: string): Promise<MessageInput> {
  const u = message.upload;
  if (!u) return message;
  const fileName = u.fileName ?? basename(u.path);
  if (ctx.run.dryRun) return { file: { url: `https://dry-run.invalid/${encodeURIComponent(fileName)}`, fileName, caption: u.caption } };
  const bytes = await readFile(ctx.resolvePath(u.path)).catch((e: NodeJS.ErrnoException) => {
    throw new FlowError('ACTION_INPUT_INVALID', {
      action: MESSAGES_BROADCAST,
      field: `${where}.upload.path`,
      reason: `cannot read '${u.path}': ${e.code ?? e.message}`,
    });
  });
  const key = `upload:${createHash('sha256').update(bytes).digest('hex')}:${fileName}`;
  let url = await ctx.state.get<string>(key);
  if (url === undefined) {
    url = (await ctx.client.uploadFile({ file: new Uint8Array(bytes), fileName }, { signal: ctx.signal })).urlFile;
    await ctx.state.set(key, url);
  }
  return { file: { url, fileName, caption: u.caption } };
}

/** The variants as sent: one unnamed for `message`; uploads done. */
async function variantsOf(ctx: ActionContext, input: MessagesBroadcastInput): Promise<{ variants: Variant[]; single: boolean }> {
  if (input.message)
    return { variants: [{ name: 'default', weight: 1, message: await uploaded(ctx, input.message, 'message') }], single: true };
  const variants: Variant[] = [];
  for (const [i, v] of input.variants!.entries())
    variants.push({ ...v, message: await uploaded(ctx, v.message, `variants[${i}].message`) });
  return { variants, single: false };
}

/** The input as sent: its pool resolved (config.yaml's, by name). */
type SendingInput = Omit<MessagesBroadcastInput, 'pool'> & { pool?: Pool };

function specOf(ctx: ActionContext, input: SendingInput, variants: Variant[], single: boolean): BroadcastSpec<SendingInput> {
  // The draw's seed: the campaign's name keeps a recipient's variant across its runs.
  const seed = input.campaign ?? `${ctx.run.flow}/${ctx.run.step}/${ctx.run.id}`;
  return {
    action: MESSAGES_BROADCAST,
    columns: MESSAGES_REPORT_COLUMNS,
    funnel: { replyWindowMs: input.replyWindow },
    prepare(c, _input, chatId, row, index, rec) {
      const { variant, index: at } = pickVariant(variants, seed, chatId, rec?.variant);
      const where = single ? 'message' : `variants[${at}].message`;
      return prepareMessage(
        c,
        { action: MESSAGES_BROADCAST, where, message: variant.message, variant: single ? undefined : variant.name },
        chatId,
        row,
        index,
      );
    },
  };
}

export const messagesBroadcast = defineAction({
  name: MESSAGES_BROADCAST,
  description:
    'Sends one message of any kind (text, file by URL or upload, poll, location, contact, buttons) to many chats through the send queue, exactly once per recipient even across crashes, with per-recipient templates (`${{ row.firstName }}`), A/B variants by weight, send windows and recipient hours in their own time zone; follows each message to delivered/read and writes a report.',
  input: MessagesBroadcastInput,
  // The message is a per-recipient template (`row` is each recipient's row), evaluated here.
  rawInputs: ['message', 'variants'],
  dryRun: true,
  countsRecords: true,
  runsOnWorkers: true,
  writes: true,
  output: {
    description:
      'Summary { total, recipients, duplicates, invalid, sent, delivered, read, failed, unknown, notSent, optedOut, reconciled, resent, earlier, report } (+ wouldSend on a dry run); per-recipient variant, idMessage and status in the report file.',
  },
  firstWait: (withBlock, now, zone) => windowWait(withBlock.window, now, zone),
  configNames: poolNames,
  async run(ctx, input): Promise<MessagesBroadcastSummary> {
    const pool = poolOf(ctx, input);
    const { variants, single } = await variantsOf(ctx, input);
    const resolved: SendingInput = { ...input, pool };
    return runBroadcast(ctx, resolved, specOf(ctx, resolved, variants, single));
  },
});
