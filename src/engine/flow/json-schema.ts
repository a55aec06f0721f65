/**
 * The JSON Schema of flow files, for editor autocomplete
 * (`# yaml-language-server: $schema=../schema/flow.schema.json`). Emitted
 * from the same zod schema the loader validates with, plus each registered
 * action's input schema as the shape of `with:` for that `uses:`.
 */
import { z } from 'zod';
import type { ActionRegistry } from '../registry/registry.js';
import { FlowFileSchema } from './schema.js';

type JsonSchema = Record<string, unknown>;

/** Any field of `with:` may instead be a `${{ }}` template, checked at run time. */
const TEMPLATE: JsonSchema = {
  type: 'string',
  pattern: '\\$\\{\\{[\\s\\S]*\\}\\}',
  description: 'A ${{ expression }}, evaluated when the step runs.',
};

function toJson(schema: z.ZodType): JsonSchema {
  const out = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  delete out.$schema;
  return out;
}

/** Lets every property (and the whole value) be a template too. */
function templatable(schema: JsonSchema): JsonSchema {
  const props = schema.properties as Record<string, JsonSchema> | undefined;
  if (!props) return { anyOf: [schema, TEMPLATE] };
  const properties: Record<string, JsonSchema> = {};
  for (const [k, v] of Object.entries(props)) properties[k] = { anyOf: [v, TEMPLATE] };
  return { ...schema, properties };
}

export function buildFlowJsonSchema(registry: ActionRegistry): JsonSchema {
  const root = toJson(FlowFileSchema);
  const steps = (root.properties as Record<string, JsonSchema>).steps!;
  const step = steps.items as JsonSchema;
  const actions = registry.list();
  const props = step.properties as Record<string, JsonSchema>;
  props.uses = {
    description: 'The action: an API method, log, or a plugin action.',
    // The enum drives completion; a plain string keeps actions of plugins unknown here valid.
    anyOf: [{ enum: actions.map((a) => a.name) }, { type: 'string', minLength: 1 }],
  };
  step.allOf = actions.map((a) => ({
    if: { properties: { uses: { const: a.name } }, required: ['uses'] },
    then: {
      properties: {
        with: { ...templatable(toJson(a.input as z.ZodType)), description: `${a.name}: ${a.description} Returns ${a.output.description}.` },
      },
    },
  }));
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'msgflow flow',
    ...root,
  };
}

/** The schema as committed in schema/flow.schema.json: stable key order, 2-space indent, final newline. */
export function renderFlowJsonSchema(registry: ActionRegistry): string {
  return `${JSON.stringify(buildFlowJsonSchema(registry), null, 2)}\n`;
}
