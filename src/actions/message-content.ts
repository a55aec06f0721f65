/**
 * What messages.broadcast sends: one message of any kind (text, file by URL
 * or upload, poll, location, contact, buttons) as written in `with:`, its
 * templates evaluated per recipient (`${{ row.<field> }}`), turned into the
 * request of its sending method; and the A/B variant a recipient gets.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { FlowError, ValidationError } from '../api/errors.js';
import { validateRequest } from '../api/validate.js';
import { contentKey } from '../client/send-lookup.js';
import type { ActionContext } from '../engine/action.js';
import { containsTemplate } from '../engine/expr/template.js';
import type { BroadcastMethod, Prepared } from './broadcast-core.js';
import { normalisePhone } from './phone.js';

// Every value may be a `${{ }}` template (evaluated per recipient): the kinds' shapes name their keys,
// and the evaluated request is checked by the method's own schema (api/schemas.ts) for each recipient.
const text = z.string();
const num = z.union([z.number(), z.string()]);
const flag = z.union([z.boolean(), z.string()]);

export const MessageSchema = z
  .strictObject({
    text: text.optional().describe('A text message (sendMessage).'),
    file: z
      .strictObject({ url: text, fileName: text, caption: text.optional() })
      .optional()
      .describe('A file by URL (sendFileByUrl): { url, fileName, caption }.'),
    upload: z
      .strictObject({ path: text, fileName: text.optional(), caption: text.optional() })
      .optional()
      .describe(
        "A file of the project, uploaded once per run (uploadFile) and sent by its link (sendFileByUrl): { path, fileName, caption }. @default fileName: the path's base name",
      ),
    poll: z
      .strictObject({ question: text, options: z.union([z.array(text), text]), multipleAnswers: flag.optional() })
      .optional()
      .describe('A poll (sendPoll): { question, options, multipleAnswers }.'),
    location: z
      .strictObject({ latitude: num, longitude: num, name: text.optional(), address: text.optional() })
      .optional()
      .describe('A location (sendLocation): { latitude, longitude, name, address }.'),
    contact: z
      .strictObject({
        phone: num,
        firstName: text.optional(),
        middleName: text.optional(),
        lastName: text.optional(),
        company: text.optional(),
      })
      .optional()
      .describe('A contact card (sendContact): { phone, firstName, middleName, lastName, company }.'),
    buttons: z
      .strictObject({ header: text.optional(), body: text, footer: text.optional(), buttons: z.array(z.record(z.string(), z.unknown())) })
      .optional()
      .describe(
        'Interactive buttons (sendInteractiveButtons): { header, body, footer, buttons: [{ type, buttonId, buttonText, url|phoneNumber|copyCode }] }.',
      ),
  })
  .refine((m) => Object.values(m).filter((v) => v !== undefined).length === 1, {
    error: 'give exactly one of text, file, upload, poll, location, contact, buttons',
  })
  .describe('The message: exactly one of text, file, upload, poll, location, contact, buttons.');

export type MessageInput = z.output<typeof MessageSchema>;

export const VariantSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,40}$/, { error: 'letters, digits, _ . - only' })
    .describe('The variant, as the report and the funnel name it.'),
  weight: z.number().positive().default(1).describe("The variant's share: weight / the sum of the weights. @default 1"),
  message: MessageSchema,
});

export type Variant = z.output<typeof VariantSchema>;

type Kind = keyof MessageInput;
type Built = { method: BroadcastMethod; body: Record<string, unknown>; from: Record<string, string>; caption?: string };

const asNumber = (v: unknown) => (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v);
const asFlag = (v: unknown) => (v === 'true' ? true : v === 'false' ? false : v);
const asOptions = (v: unknown) =>
  (typeof v === 'string' ? v.split('|').map((s) => s.trim()) : Array.isArray(v) ? v : []).map((o) => ({ optionName: String(o) }));
const str = (v: unknown) => (v === undefined || v === null ? undefined : String(v));

function phoneOf(v: unknown): unknown {
  const p = normalisePhone(v);
  return p.ok ? Number(p.digits) : v;
}

/** The evaluated message as its method's request; `from`: the request's top-level field → the `with:` key it comes from. */
function build(kind: Kind, m: Record<string, unknown>): Built {
  switch (kind) {
    case 'text':
      return { method: 'sendMessage', body: { message: str(m.value) }, from: { message: 'text' }, caption: str(m.value) };
    case 'file':
    case 'upload': {
      const body = { urlFile: str(m.url), fileName: str(m.fileName), caption: str(m.caption) };
      return { method: 'sendFileByUrl', body, from: { urlFile: 'url', fileName: 'fileName', caption: 'caption' }, caption: body.caption };
    }
    case 'poll': {
      const body = { message: str(m.question), options: asOptions(m.options), multipleAnswers: asFlag(m.multipleAnswers) ?? false };
      return {
        method: 'sendPoll',
        body,
        from: { message: 'question', options: 'options', multipleAnswers: 'multipleAnswers' },
        caption: body.message,
      };
    }
    case 'location': {
      const body = { latitude: asNumber(m.latitude), longitude: asNumber(m.longitude), nameLocation: str(m.name), address: str(m.address) };
      const from = { latitude: 'latitude', longitude: 'longitude', nameLocation: 'name', address: 'address' };
      return { method: 'sendLocation', body, from, caption: body.nameLocation ?? `${String(body.latitude)},${String(body.longitude)}` };
    }
    case 'contact': {
      const contact = {
        phoneContact: phoneOf(m.phone),
        firstName: str(m.firstName),
        middleName: str(m.middleName),
        lastName: str(m.lastName),
        company: str(m.company),
      };
      const caption = [contact.firstName, contact.lastName, contact.company].filter(Boolean).join(' ') || String(contact.phoneContact);
      return { method: 'sendContact', body: { contact }, from: { contact: 'phone' }, caption };
    }
    case 'buttons': {
      const body = { header: str(m.header), body: str(m.body), footer: str(m.footer), buttons: m.buttons };
      return {
        method: 'sendInteractiveButtons',
        body,
        from: { header: 'header', body: 'body', footer: 'footer', buttons: 'buttons' },
        caption: body.body,
      };
    }
  }
}

/** The kind of a message and its fields (a text's under `value`). */
export function kindOf(message: MessageInput): { kind: Kind; fields: Record<string, unknown> } {
  const kind = (Object.keys(message) as Kind[]).find((k) => message[k] !== undefined)!;
  const v = message[kind];
  return { kind, fields: typeof v === 'string' ? { value: v } : (v as Record<string, unknown>) };
}

/**
 * The request `chatId` gets for `message` (templates evaluated with the
 * recipient's `row`), or why its row is invalid: a field that failed the
 * method's check is the row's fault when its value was a template, the flow's
 * (a FlowError naming `where`) when it was written as is.
 */
export function prepareMessage(
  ctx: ActionContext,
  o: { action: string; where: string; message: MessageInput; variant?: string },
  chatId: string,
  row: Record<string, unknown>,
  index: number,
): Prepared | string {
  const { kind, fields } = kindOf(o.message);
  const rendered = containsTemplate(fields) ? (ctx.render(fields, { row, item: row, index }) as Record<string, unknown>) : fields;
  const built = build(kind, rendered);
  const body = Object.fromEntries(Object.entries(built.body).filter(([, v]) => v !== undefined));
  try {
    validateRequest(built.method, { chatId, ...body });
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    const top = (e.field ?? '').split(/[.[]/)[0]!;
    const key = built.from[top];
    const written = key === undefined ? undefined : fields[key === 'text' ? 'value' : key];
    if (top === 'chatId' || containsTemplate(written)) return e.details;
    const field = `${o.where}.${kind}${key && key !== 'text' ? `.${key}` : ''}`;
    throw new FlowError('ACTION_INPUT_INVALID', { action: o.action, field, reason: e.details }, { cause: e });
  }
  const kindName = kind === 'upload' ? 'file' : kind;
  return {
    method: built.method,
    body,
    content: contentKey(built.method, body)!,
    caption: built.caption,
    variant: o.variant,
    kind: kindName,
  };
}

/**
 * The variant of `chatId`: the one its record kept, else one drawn by
 * weight from a hash of the campaign (or run) and the chat, so that the same
 * recipient gets the same variant in every pass and every run.
 */
export function pickVariant(
  variants: readonly Variant[],
  seed: string,
  chatId: string,
  kept?: string,
): { variant: Variant; index: number } {
  const keptAt = kept === undefined ? -1 : variants.findIndex((v) => v.name === kept);
  if (keptAt >= 0) return { variant: variants[keptAt]!, index: keptAt };
  const h = createHash('sha256').update(`${seed}\n${chatId}`).digest();
  const x = (h.readUInt32BE(0) / 0x1_0000_0000) * variants.reduce((s, v) => s + v.weight, 0);
  let acc = 0;
  for (const [index, variant] of variants.entries()) {
    acc += variant.weight;
    if (x < acc) return { variant, index };
  }
  return { variant: variants.at(-1)!, index: variants.length - 1 };
}
