/**
 * The `conversation:` block of a flow: a dialog of states, each sending
 * something and declaring what the chat's next message leads to. The shape
 * is checked here (zod, also emitted into schema/flow.schema.json); the
 * rules across states (goto targets, reachability, patterns, templates) are
 * in check.ts, and what a message does to a session in transition.ts.
 */
import { z } from 'zod';
import { BUTTON_TEXT_MAX, BUTTONS_MAX } from '../../api/schemas.js';
import { DurationSchema, IDENT_RE, StepExecutorSchema } from '../flow/schema-parts.js';

/** Value kinds a transition's `expect:` parses and validates; the parsed value is `value` in its `set:`. */
export const VALIDATORS = ['number', 'email', 'date', 'phone', 'text'] as const;
export type Validator = (typeof VALIDATORS)[number];

/** Message kinds a transition's `type:` names (families of the service's typeMessage). */
export const MESSAGE_KINDS = ['text', 'location', 'contact', 'file', 'image', 'video', 'document', 'audio', 'sticker', 'poll'] as const;
export type MessageKind = (typeof MESSAGE_KINDS)[number];

const STATE_HINT = "a state name must start with a letter or '_' and contain only letters, digits and '_'";
const StateName = z.string().regex(IDENT_RE, { error: STATE_HINT });

/** A file sent by a state: sendFileByUrl. */
const FileSchema = z
  .strictObject({
    url: z.string().min(1).meta({ description: 'Where the service fetches the file from; may use ${{ }}.' }),
    fileName: z.string().min(1).meta({ description: 'The name the chat shows, with its extension.' }),
    caption: z.string().optional(),
  })
  .meta({ description: 'A file the state sends (sendFileByUrl).' });

const ButtonSchema = z.strictObject({
  id: z.string().min(1).max(64).meta({ description: "The button's id: what a transition's `button:` matches." }),
  text: z.string().min(1).max(BUTTON_TEXT_MAX).meta({ description: "The button's label (it matches too)." }),
});

/** What a state (or a fallback, the idle timeout) sends, in this order: the file, then the text (or buttons). */
const SendFields = {
  say: z.string().min(1).optional().meta({ description: 'A text message; may use ${{ session.vars.x }}.' }),
  buttons: z
    .array(ButtonSchema)
    .min(1)
    .max(BUTTONS_MAX)
    .optional()
    .meta({ description: 'Up to 3 reply buttons under `say` (sendInteractiveButtonsReply): `say` is their body.' }),
  file: FileSchema.optional(),
};

const VarsSchema = z
  .record(z.string().regex(IDENT_RE, { error: `a variable name ${STATE_HINT.slice(14)}` }), z.unknown())
  .meta({ description: 'Session variables to set (session.vars.NAME); values may use ${{ value }}, ${{ message.text }}.' });

export const TransitionSchema = z
  .strictObject({
    text: z
      .string()
      .min(1)
      .optional()
      .meta({ description: "Case-insensitive regular expression the message's text, trimmed, must match." }),
    button: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .optional()
      .meta({ description: 'A pressed button (its id or label), a chosen list row or a poll option: one or a list.' }),
    type: z
      .union([z.enum(MESSAGE_KINDS), z.array(z.enum(MESSAGE_KINDS)).min(1)])
      .optional()
      .meta({ description: 'The message kind: location, contact, file (any file), image, video, document, audio, sticker, poll, text.' }),
    expect: z.enum(VALIDATORS).optional().meta({
      description:
        "The message's text parsed as a number, an email, a date (YYYY-MM-DD or DD.MM.YYYY), a phone number or any text: `value`.",
    }),
    set: VarsSchema.optional(),
    say: z.string().min(1).optional().meta({ description: 'Said before the next state sends its own.' }),
    goto: StateName.optional().meta({ description: 'The next state (it sends what it sends). Default: stay (nothing is sent again).' }),
    end: z
      .boolean()
      .optional()
      .meta({ description: 'End the session after this transition (its `say`, and the state it goes to, are sent).' }),
    handover: z.boolean().optional().meta({ description: 'Hand the chat to a human: the bot stays quiet in it (see handover).' }),
  })
  .meta({ description: 'Where the next message leads when it matches every condition given (none: any message).' });

const FallbackSchema = z
  .strictObject({
    ...SendFields,
    retries: z.number().int().min(0).max(100).default(2).meta({ description: 'Misunderstood messages answered before `goto`.' }),
    goto: StateName.optional().meta({ description: 'The state after the retries are used up. Default: the session ends.' }),
    handover: z.boolean().optional().meta({ description: 'Hand over to a human once the retries are used up.' }),
  })
  .meta({ description: 'A message no transition matched: say so, up to `retries` times, then go to `goto`.' });

export const StateSchema = z
  .strictObject({
    ...SendFields,
    on: z.array(TransitionSchema).default([]).meta({ description: 'Transitions on the next message, the first matching wins.' }),
    fallback: FallbackSchema.optional(),
    end: z.boolean().optional().meta({ description: 'The session ends once this state has sent what it sends.' }),
    handover: z.boolean().optional().meta({ description: 'Entering the state hands the chat to a human (after it sends).' }),
  })
  .meta({ description: 'One state of the dialog.' });

const CommandsSchema = z
  .strictObject({
    restart: z.string().min(1).nullable().default('^(restart|start over)$').meta({ description: 'Back to the start state, vars cleared.' }),
    back: z.string().min(1).nullable().default('^back$').meta({ description: 'The previous state (the history).' }),
    stop: z
      .string()
      .min(1)
      .nullable()
      .default('^(stop|unsubscribe)$')
      .meta({ description: "Ends the session and puts the chat on the instance's opt-out list." }),
    operator: z.string().min(1).nullable().default('^(operator|human)$').meta({ description: 'Hands the chat over to a human.' }),
  })
  .meta({ description: 'Commands understood in every state, each a case-insensitive regular expression (null: off).' });

const IdleSchema = z
  .strictObject({
    after: DurationSchema.meta({ description: 'Silence after which the session ends.' }),
    ...SendFields,
  })
  .meta({ description: 'Ends a session its chat left silent: optionally says goodbye.' });

export const ConversationSchema = z
  .strictObject({
    start: StateName.meta({ description: 'The state a new session enters (it sends what it sends).' }),
    opener: z.string().min(1).optional().meta({
      description: 'Case-insensitive regular expression a message must match to start a session. Default: any message starts one.',
    }),
    states: z.record(StateName, StateSchema).refine((s) => Object.keys(s).length > 0, { error: 'a conversation needs at least one state' }),
    commands: CommandsSchema.prefault({}),
    idle: IdleSchema.optional(),
    expire: DurationSchema.optional().meta({ description: 'A session older than this ends at its next message, which starts a new one.' }),
    journalLag: DurationSchema.prefault('2m').meta({
      description:
        "How long a message the service sent may take to appear in its chat history (the service documents up to 2 minutes): a send the process died in is looked for this long after before it is made again. The local service's journal has no lag unless local.network.journalLagMs says so.",
    }),
    handover: z
      .strictObject({
        for: DurationSchema.prefault('1h').meta({ description: 'How long the bot stays quiet in a handed-over chat.' }),
        say: z.string().min(1).optional().meta({ description: 'Said when the chat is handed over.' }),
      })
      .prefault({})
      .meta({ description: 'Handing a chat to a human (the operator command, a state or a transition with handover: true).' }),
    executor: StepExecutorSchema.default('local').meta({
      description:
        "With executor: bullmq, where the dialog step of each message runs: local (the msgflow start that consumed the notification) or workers (msgflow worker processes, the instance's queue).",
    }),
    history: z
      .number()
      .int()
      .min(1)
      .max(50)
      .default(10)
      .meta({ description: 'States remembered for `back` (and shown by msgflow sessions).' }),
  })
  .meta({ description: 'A dialog: per-chat sessions moving between states on each incoming message.' });

export type Conversation = z.output<typeof ConversationSchema>;
export type DialogState = z.output<typeof StateSchema>;
export type Transition = z.output<typeof TransitionSchema>;
export type Fallback = z.output<typeof FallbackSchema>;
export type SendSpec = Pick<DialogState, 'say' | 'buttons' | 'file'>;
