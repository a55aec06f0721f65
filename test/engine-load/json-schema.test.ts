import { API_METHODS } from '../../src/api/methods.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderSchemaFor } from '../../src/cli/commands/schema.js';
import { buildFlowJsonSchema } from '../../src/engine/flow/json-schema.js';
import { builtinRegistry } from './helpers.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('schema/flow.schema.json', () => {
  it('is up to date with the zod schemas and the actions of config.yaml (run `msgflow schema --out schema/flow.schema.json` when this fails)', async () => {
    const committed = readFileSync(path.join(REPO, 'schema/flow.schema.json'), 'utf8');
    expect(committed).toBe(await renderSchemaFor(path.join(REPO, 'config.yaml')));
  });

  it('describes steps with the input schema of each action, where any field may be a template', () => {
    const schema = buildFlowJsonSchema(builtinRegistry()) as any;
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(['name']);
    const step = schema.properties.steps.items;
    expect(step.properties.uses.anyOf[0].enum).toContain('checkAccount');
    expect(step.properties.timeout.anyOf[0].pattern).toBe('^(\\d+(\\.\\d+)?(ms|s|m|h|d))+$');
    const send = step.allOf.find((x: any) => x.if.properties.uses.const === 'sendFileByUrl').then.properties.with;
    expect(send.additionalProperties).toBe(false);
    expect(send.required).toEqual(['chatId', 'urlFile', 'fileName']);
    expect(send.properties.typingTime.anyOf[0]).toMatchObject({ type: 'number' });
    expect(send.properties.typingTime.anyOf[1].pattern).toBe('\\$\\{\\{[\\s\\S]*\\}\\}');
    // One branch per built-in action: each API method, and log.
    expect(step.allOf).toHaveLength(API_METHODS.length + 1);
  });
});
