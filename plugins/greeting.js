// Example msgflow plugin (plain ESM JavaScript): greeting captions.
//
// Listed in config.yaml as `plugins: [./plugins/greeting.js]`, it adds two
// actions a flow can `uses:`:
//
//   - id: compose
//     uses: greeting.compose
//     forEach: ${{ inputs.contacts }}
//     with: { template: "Hello {name}, your code is {code}", contact: "${{ item }}" }
//
//   - id: send
//     uses: greeting.send
//     forEach: ${{ inputs.contacts }}
//     with:
//       contact: "${{ item }}"
//       urlFile: https://example.org/files/card.png
//       fileName: card.png
//
// An action is { name, description, input (a zod schema), output, run(ctx, input) }.
// The engine validates `with:` against `input` (statically when the flow is
// loaded, and again at run time after ${{ }} templates are evaluated), so run()
// receives parsed, typed input.
import { z } from 'zod';

/** The service's caption limit (sendFileByUrl). */
export const CAPTION_MAX = 1024;

// A contact is a row of a CSV/JSON/YAML file: any scalar columns.
const Contact = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]), {
    error: "'contact' must be an object of scalar fields (a CSV row, for example)",
  })
  .refine((c) => Object.keys(c).length > 0, { error: "'contact' must have at least one field" });

const ComposeInput = z.strictObject({
  /** `{field}` placeholders are replaced by the contact's fields. */
  template: z.string({ error: "'template' must be a string" }).min(1, { error: "'template' must not be empty" }).default('Hello, {name}!'),
  contact: Contact,
  /** Written for a placeholder whose field is missing or empty; without it, that is an error. */
  fallback: z.string().optional(),
});

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Fills `{field}` placeholders from a contact.
 * @param {string} template
 * @param {Record<string, unknown>} contact
 * @param {string | undefined} fallback
 * @returns {string}
 */
export function composeCaption(template, contact, fallback) {
  const missing = [];
  const caption = template.replace(PLACEHOLDER, (whole, field) => {
    const v = Object.hasOwn(contact, field) ? contact[field] : undefined;
    if (v === undefined || v === null || v === '') {
      if (fallback !== undefined) return fallback;
      missing.push(field);
      return whole;
    }
    return String(v);
  });
  if (missing.length > 0) {
    throw new Error(`contact has no ${missing.map((f) => `'${f}'`).join(', ')} for the template (fields: ${Object.keys(contact).join(', ')}); add a fallback to allow it`);
  }
  if (caption.length > CAPTION_MAX) {
    throw new Error(`caption is ${caption.length} characters, more than the ${CAPTION_MAX} a caption may have`);
  }
  return caption;
}

/**
 * The personal chat id of a contact: its `chatId`, or its `phone` /
 * `phoneNumber` digits followed by @c.us.
 * @param {Record<string, unknown>} contact
 * @returns {string | undefined}
 */
export function chatIdOf(contact) {
  if (typeof contact.chatId === 'string' && contact.chatId !== '') return contact.chatId;
  const phone = contact.phone ?? contact.phoneNumber;
  if (phone === undefined || phone === null) return undefined;
  const digits = String(phone).replace(/[\s()+-]/g, '');
  return /^\d{5,15}$/.test(digits) ? `${digits}@c.us` : undefined;
}

export const compose = {
  name: 'greeting.compose',
  description: 'Builds a caption from a template with {field} placeholders and a contact (e.g. a CSV row).',
  input: ComposeInput,
  output: {
    description: '{ caption: string, chatId?: string } (chatId from the contact\'s chatId or phone)',
  },
  async run(ctx, input) {
    const caption = composeCaption(input.template, input.contact, input.fallback);
    const chatId = chatIdOf(input.contact);
    ctx.logger.debug('greeting composed', { chars: caption.length });
    return chatId === undefined ? { caption } : { caption, chatId };
  },
};

const SendInput = ComposeInput.extend({
  /** Where to send; default: the contact's chat id. */
  chatId: z.string().optional(),
  urlFile: z.string({ error: "'urlFile' must be a string" }).regex(/^https?:\/\//, { error: 'url has incorrect format. It should start with http(s)://' }),
  fileName: z.string({ error: "'fileName' must be a string" }).min(1),
});

export const send = {
  name: 'greeting.send',
  description: 'Composes a greeting caption and sends a file with it (sendFileByUrl). A resumed run does not send the same item twice.',
  input: SendInput,
  output: {
    description: '{ caption, chatId, idMessage } ({ caption, chatId, dryRun: true } in a dry run)',
  },
  async run(ctx, input) {
    const caption = composeCaption(input.template, input.contact, input.fallback);
    const chatId = input.chatId ?? chatIdOf(input.contact);
    if (chatId === undefined) throw new Error("no chatId: give 'chatId' or a contact with chatId or phone");
    if (ctx.run.dryRun) return { caption, chatId, dryRun: true };
    // sendFileByUrl is not idempotent: remember what was sent in the durable
    // state of this step/item, so a resumed attempt does not send it again.
    const sent = await ctx.state.get('idMessage');
    if (typeof sent === 'string') return { caption, chatId, idMessage: sent };
    const res = await ctx.client.sendFileByUrl({ chatId, urlFile: input.urlFile, fileName: input.fileName, caption }, { signal: ctx.signal });
    await ctx.state.set('idMessage', res.idMessage);
    return { caption, chatId, idMessage: res.idMessage };
  },
};

export default {
  name: 'greeting',
  actions: [compose, send],
};
