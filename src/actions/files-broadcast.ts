/**
 * `files.broadcast`: one file to many chats through the instance's send
 * queue, exactly once per recipient: the preset of messages.broadcast
 * (broadcast-core.ts) for one file by URL with a caption per recipient
 * (`${{ item.<field> }}`), with its own `with:` and report columns.
 */
import { z } from 'zod';
import { ValidationError, FlowError } from '../api/errors.js';
import { contentKey } from '../client/send-lookup.js';
import { TYPING_TYPES } from '../api/schemas.js';
import { validateRequest } from '../api/validate.js';
import { defineAction, type ActionContext } from '../engine/action.js';
import { hasTemplate } from '../engine/expr/template.js';
import { broadcastFields, runBroadcast, windowWait, type BroadcastSpec, type BroadcastSummary, type Prepared } from './broadcast-core.js';
import { fileField, itemsField, recordsFrom } from './kit/inputs.js';

export const FILES_BROADCAST = 'files.broadcast';

export const FilesBroadcastInput = z
  .strictObject({
    file: fileField('recipients'),
    recipients: itemsField('recipients: phone numbers, chat IDs, or records with phone or chatId plus any fields the caption uses'),
    urlFile: z.string().describe('Link to the file (http:// or https://), fetched by the service.'),
    fileName: z.string().describe('File name with extension; the extension decides the file type.'),
    caption: z
      .string()
      .optional()
      .describe(
        'Caption template, evaluated per recipient: `${{ item.<field> }}` reads the recipient record. At most 1024 characters after evaluation.',
      ),
    typingTime: z.number().int().optional().describe('Typing notification before sending, ms (1000 to 20000).'),
    typingType: z.enum(TYPING_TYPES).optional().describe('Activity shown to the recipient. @default text (service default)'),
    ...broadcastFields,
  })
  .refine(...recordsFrom('file', 'recipients'))
  .describe('Sends one file to many chats through the send queue, exactly once per recipient, and follows the statuses.');

export type FilesBroadcastInput = z.output<typeof FilesBroadcastInput>;

export type FilesBroadcastSummary = BroadcastSummary;

export const BROADCAST_REPORT_COLUMNS = [
  'chatId',
  'where',
  'outcome',
  'idMessage',
  'status',
  'sentAt',
  'deliveredAt',
  'readAt',
  'reconciled',
  'resent',
  'caption',
  'error',
] as const;

function captionFor(ctx: ActionContext, template: string | undefined, item: Record<string, unknown>, index: number): string | undefined {
  if (template === undefined) return undefined;
  if (!hasTemplate(template)) return template;
  // `item` is the recipient's row, not a forEach item; the rest is the run's scope.
  const v = ctx.render(template, { item, index });
  return v === undefined || v === null ? '' : String(v);
}

/** The recipient's file and caption, or why the row is invalid; a bad urlFile/fileName/typing stops the job (not a row's fault). */
function prepare(
  ctx: ActionContext,
  input: FilesBroadcastInput,
  chatId: string,
  row: Record<string, unknown>,
  index: number,
): Prepared | string {
  try {
    const caption = captionFor(ctx, input.caption, row, index);
    const body = { urlFile: input.urlFile, fileName: input.fileName, caption, typingTime: input.typingTime, typingType: input.typingType };
    validateRequest('sendFileByUrl', { chatId, ...body });
    return { method: 'sendFileByUrl', body, content: contentKey('sendFileByUrl', body)!, caption, kind: 'file' };
  } catch (e) {
    const msg = e instanceof ValidationError ? e.details : (e as Error).message;
    if (e instanceof ValidationError && !['caption', 'chatId'].includes(e.field ?? 'caption'))
      throw new FlowError('ACTION_INPUT_INVALID', { action: FILES_BROADCAST, field: e.field ?? 'with', reason: msg }, { cause: e });
    return msg;
  }
}

const spec: BroadcastSpec<FilesBroadcastInput> = {
  action: FILES_BROADCAST,
  columns: BROADCAST_REPORT_COLUMNS,
  prepare,
  legacyFileName: (input) => input.fileName,
};

export const filesBroadcast = defineAction({
  name: FILES_BROADCAST,
  description:
    'Sends one file (sendFileByUrl) to many chats through the send queue, exactly once per recipient even across crashes, within a start/stop window (waiting durably for it to open), with a caption per recipient; follows each message to delivered/read and writes a report.',
  input: FilesBroadcastInput,
  // The caption is a per-recipient template (`item` is each recipient), evaluated here.
  rawInputs: ['caption'],
  dryRun: true,
  countsRecords: true,
  runsOnWorkers: true,
  writes: true,
  output: {
    description:
      'Summary { total, recipients, duplicates, invalid, sent, delivered, read, failed, unknown, notSent, optedOut, reconciled, resent, earlier, report } (+ wouldSend on a dry run); per-recipient idMessage and status in the report file.',
  },
  firstWait: (withBlock, now, zone) => windowWait(withBlock.window, now, zone),
  run: (ctx, input): Promise<FilesBroadcastSummary> => runBroadcast(ctx, input, spec),
});
