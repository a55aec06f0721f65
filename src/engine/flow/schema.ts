/**
 * The zod schema of a flow file. It is the single source of truth of the
 * file format and of the flow model: the loader validates with it, its output
 * (defaults applied, durations in ms) is the {@link Flow} type (types.ts
 * infers it from here), and schema/flow.schema.json is emitted from its input
 * side. Rules that need the action registry, the other steps or the
 * scheduler's validators live in check.ts.
 */
import { z } from 'zod';
import { NOTIFICATION_TYPES } from '../../api/notifications.js';

export { DurationSchema, IDENT_RE } from './schema-parts.js';
import { DurationSchema, IDENT_RE, IDENT_HINT, StepExecutorSchema } from './schema-parts.js';
import { ConversationSchema } from '../conversation/schema.js';

/** A string containing `${{ }}`, for values that must be computed. */
const TemplateString = z.string().regex(/\$\{\{[\s\S]*\}\}/, { error: 'expected a ${{ expression }}' });

export const RetrySchema = z
  .strictObject({
    maxAttempts: z.number().int().min(1).max(100).default(1).meta({ description: 'Attempts including the first.' }),
    backoff: z.enum(['fixed', 'exponential']).default('exponential'),
    delay: DurationSchema.prefault('1s').meta({ description: 'First delay between attempts.' }),
    maxDelay: DurationSchema.prefault('10m').meta({ description: 'Cap on one delay.' }),
    jitter: z.boolean().default(true).meta({ description: 'Randomise each delay in [delay/2, delay].' }),
  })
  .meta({ description: 'Retry policy of the step (per item for forEach).' });

/** The model's names: durations in ms say so (`delayMs`, `timeoutMs`); a condition is always text. */
function toStep({ retry: { delay, maxDelay, ...retry }, timeout, if: cond, ...step }: z.output<typeof BaseStepSchema>) {
  return {
    ...step,
    retry: { ...retry, delayMs: delay, maxDelayMs: maxDelay },
    ...(cond === undefined ? {} : { if: String(cond) }),
    ...(timeout === undefined ? {} : { timeoutMs: timeout }),
  };
}

/** A step with its `on-failure:` steps, in the model's names (`onFailure`). */
function toStepWithHandlers({ 'on-failure': handlers, ...step }: z.output<typeof StepSchema>) {
  return { ...toStep(step), ...(handlers === undefined ? {} : { onFailure: handlers }) };
}

const BaseStepSchema = z
  .strictObject({
    id: z
      .string()
      .regex(IDENT_RE, { error: `step id ${IDENT_HINT}` })
      .meta({ description: 'Unique id: results are read as steps.<id>.' }),
    name: z.string().optional(),
    uses: z
      .string()
      .min(1)
      .meta({ description: 'The action: an API method, log, a plugin action, or flow/<name> to run another flow as a sub-flow.' }),
    if: z.union([z.string(), z.boolean()]).optional().meta({ description: 'Run the step only when this expression is true.' }),
    forEach: z
      .union([TemplateString, z.array(z.unknown())], { error: 'expected a ${{ expression }} giving an array, or an array' })
      .optional()
      .meta({ description: 'Run the action once per item; `item` and `index` are set.' }),
    concurrency: z.number().int().min(1).max(1000).default(1).meta({ description: 'forEach items in flight at once.' }),
    with: z.record(z.string(), z.unknown()).default({}).meta({ description: "The action's input; values may use ${{ }}." }),
    retry: RetrySchema.prefault({}),
    timeout: DurationSchema.optional().meta({ description: 'Per attempt.' }),
    continueOnError: z.boolean().default(false).meta({ description: 'Record a failure and go on instead of failing the run.' }),
    executor: StepExecutorSchema.optional(),
  })
  .meta({ description: 'One step of the flow.' });

export const StepSchema = BaseStepSchema.extend({
  'on-failure': z.array(BaseStepSchema.transform(toStep)).min(1).optional().meta({
    description:
      "Steps run when this step fails (after its retries; a forEach step when an item failed), in order, before the run goes on or ends failed; they read steps.<id>.error. Their ids are the flow's like any step's.",
  }),
}).meta({ description: 'One step of the flow.' });

const InputTypes = ['string', 'number', 'boolean', 'array', 'object', 'any'] as const;

export const InputSchema = z
  .strictObject({
    file: z.string().min(1).optional().meta({ description: 'CSV, JSON, JSON Lines or YAML data file, relative to the project directory.' }),
    value: z.unknown().optional().meta({ description: 'Inline value.' }),
    default: z.unknown().optional().meta({ description: 'Used when neither --input nor file nor value gives one.' }),
    description: z.string().optional(),
    type: z.enum(InputTypes).optional().meta({ description: '--input key=value is coerced to this type.' }),
    required: z.boolean().optional(),
    maxRows: z.number().int().positive().optional().meta({
      description: "With file: the most rows the file may have (default 100000). Bigger lists: give the file to a job's own file:.",
    }),
    stream: z.boolean().optional().meta({
      description:
        "With file: the input's value is the file's path, not its rows, for a job's file: (checkAccount.bulk, contacts.import, files.broadcast), which reads it row by row: any size, read once, and report lines name the file's lines (data/leads.csv:4).",
    }),
  })
  .refine((v) => v.file === undefined || v.value === undefined, { error: "give either 'file' or 'value', not both" })
  .refine((v) => !v.stream || v.file !== undefined, { error: "'stream' needs 'file': it streams the input's data file" })
  .meta({ description: 'A flow input.' });

export const NotificationTriggerSchema = z
  .strictObject({
    type: z.enum(NOTIFICATION_TYPES).default('incomingMessageReceived').meta({ description: "The notification's typeWebhook." }),
    text: z.string().min(1).optional().meta({
      description: "Case-insensitive regular expression the message's text (or caption), trimmed, must match, e.g. ^(stop|unsubscribe)$.",
    }),
    chatId: z.string().min(1).optional().meta({ description: 'Only notifications of this chat, e.g. 79001234567@c.us.' }),
    typeMessage: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .optional()
      .meta({
        description:
          'Only messages of this kind (messageData.typeMessage), or of one of these, e.g. pollUpdateMessage or [imageMessage, videoMessage]; a notification that is not a message never matches.',
      }),
    instance: z
      .string()
      .min(1)
      .optional()
      .meta({ description: "A name from config.yaml instances whose notifications trigger the flow. Default: the flow's instance." }),
    handover: z.enum(['respect', 'ignore']).optional().meta({
      description:
        'respect (the default): no run starts for a chat handed over to a human (the operator wrote from the phone, chat.handover); ignore: runs start anyway (an audit flow).',
    }),
  })
  .meta({ description: 'Run the flow once per matching notification of the instance; the notification is `event` in expressions.' });

/** What can raise an alert (engine/alerts): each is an event flows can trigger on. */
export const ALERT_KINDS = [
  'run-failed',
  'step-timeout',
  'sla-missed',
  'schedule-missed',
  'instance-paused',
  'notification-lag',
  'campaign-paused',
  'campaign-resumed',
] as const;

export const FailureTriggerSchema = z
  .strictObject({
    flows: z
      .array(z.string().min(1))
      .min(1)
      .meta({ description: "Names of the flows whose failed (or crashed) runs start this flow, or '*' for every flow but this one." }),
  })
  .meta({ description: 'Run once per failed run of these flows; `event` holds the failed run, step, error code and counts.' });

export const AlertTriggerSchema = z
  .strictObject({
    kinds: z
      .array(z.enum(ALERT_KINDS))
      .min(1)
      .default([...ALERT_KINDS])
      .meta({ description: `Alert kinds that start this flow: ${ALERT_KINDS.join(', ')}. Default: every kind.` }),
  })
  .meta({ description: 'Run once per alert raised (msgflow alerts lists them); `event` is the alert.' });

export const TriggerSchema = z
  .strictObject({
    notification: NotificationTriggerSchema.optional(),
    failure: FailureTriggerSchema.optional(),
    alert: AlertTriggerSchema.optional(),
    schedule: z
      .strictObject({
        cron: z.string().meta({ description: '5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first.' }),
        timezone: z.string().optional().meta({ description: "IANA zone, e.g. Europe/Berlin. Default: the machine's zone." }),
      })
      .optional(),
    overlap: z.enum(['skip', 'queue', 'allow']).default('skip').meta({ description: 'A fire while the previous run is active.' }),
    missed: z.enum(['none', 'last', 'all']).default('none').meta({ description: 'Runs missed while msgflow was down.' }),
    startup: z.boolean().default(false).meta({ description: 'Run once when `msgflow start` starts.' }),
  })
  .meta({ description: 'When the flow runs by itself.' });

export const FlowFileSchema = z
  .strictObject({
    $schema: z.string().optional(),
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, { error: "flow name must be letters, digits, '_', '-' or '.'" })
      .meta({ description: 'Unique flow name, used by `msgflow run NAME`.' }),
    description: z.string().optional(),
    instance: z.string().default('default').meta({ description: 'A name from config.yaml instances.' }),
    on: TriggerSchema.prefault({}),
    inputs: z.record(z.string().regex(IDENT_RE, { error: `input name ${IDENT_HINT}` }), InputSchema).default({}),
    env: z
      .union([z.record(z.string().regex(IDENT_RE), z.union([z.string(), z.number(), z.boolean()])), z.array(z.string().regex(IDENT_RE))])
      .optional()
      .meta({
        description:
          'Environment variables the flow may read as env.NAME: a list of names, or NAME: value pairs where a value may use ${VAR:-default}.',
      }),
    concurrency: z
      .strictObject({
        group: z
          .string()
          .min(1)
          .optional()
          .meta({ description: 'Runs of every flow with the same group share the limit. Default: the flow name.' }),
        max: z.number().int().min(1).max(1000).optional().meta({
          description:
            'Runs of the group live at once (per key value, with key). Default: 1 when a step writes (sends, adds contacts), else unlimited.',
        }),
        key: z.string().min(1).optional().meta({
          description:
            'Split the limit per value of this expression, e.g. ${{ event.senderData.chatId }}: runs with different values never wait for each other. Default for a run triggered by a notification about a chat: that chat; a constant (all) makes every run share the limit.',
        }),
      })
      .optional()
      .meta({ description: 'How many runs of this flow (or group) may execute at once, across processes and hosts sharing the store.' }),
    sla: z
      .strictObject({
        maxDuration: DurationSchema.meta({ description: 'A run still going (or ending) after this long raises a sla-missed alert.' }),
      })
      .optional()
      .meta({ description: 'How long a run of this flow may take.' }),
    debounce: z
      .strictObject({
        key: z.string().min(1).optional().meta({
          description:
            "Messages with the same value of this expression are gathered, e.g. ${{ event.senderData.chatId }}. Default: the notification's chat.",
        }),
        window: DurationSchema.meta({ description: 'A run starts once no further message came for this long, e.g. 3s.' }),
        mode: z.enum(['last', 'all']).default('last').meta({
          description:
            "last: the run's event is the last message; all: the last message, with event.messages = every message gathered, in order.",
        }),
      })
      .transform(({ window, ...d }) => ({ ...d, windowMs: window }))
      .optional()
      .meta({ description: 'Notification flows: several quick notifications of one key start one run.' }),
    conversation: ConversationSchema.optional().meta({
      description:
        'A dialog (docs/conversations.md): per-chat sessions moving between states on each incoming message. Its step (id `dialog`) runs before `steps:`, which read steps.dialog.output.',
    }),
    steps: z.array(StepSchema.transform(toStepWithHandlers)).default([]),
    outputs: z
      .record(z.string().regex(IDENT_RE, { error: `output name ${IDENT_HINT}` }), z.unknown())
      .optional()
      .meta({
        description:
          'What the run gives back when it succeeds: name -> value, values may use ${{ }} over steps, inputs and run. A sub-flow step (uses: flow/<name>) gets them as its output.',
      }),
  })
  .refine((f) => f.steps.length > 0 || f.conversation !== undefined, {
    error: 'a flow needs at least one step (or a conversation)',
    path: ['steps'],
  })
  .meta({ title: 'msgflow flow', description: 'A msgflow flow file (flows/*.yaml).' });

/** A flow file after validation: defaults applied, durations in ms, steps in the model's names. */
export type FlowFileData = z.output<typeof FlowFileSchema>;
