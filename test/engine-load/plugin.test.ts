/**
 * The example plugin (plugins/greeting.js), loaded the way msgflow loads it:
 * from config.yaml's `plugins:` through loadPlugins.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FlowError } from '../../src/api/errors.js';
import { loadConfig } from '../../src/config/load.js';
import { loadFlowFile } from '../../src/engine/flow/load.js';
import { loadPlugins } from '../../src/engine/registry/plugins.js';
import type { ActionRegistry } from '../../src/engine/registry/registry.js';
import { builtinRegistry, tempProject } from './helpers.js';
import { createActionTestContext } from '../../src/actions/testing.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { InstanceApi } from '../../src/api/types.js';

const noClient = {} as InstanceApi;

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

async function repoRegistry(): Promise<ActionRegistry> {
  const config = loadConfig(path.join(REPO, 'config.yaml'), { env: {} });
  expect(config.plugins).toContain('./plugins/greeting.js');
  const registry = builtinRegistry();
  await loadPlugins(config.plugins, config.baseDir, registry);
  return registry;
}

describe('example plugin: greeting', () => {
  it("loads from config.yaml's plugins and registers its actions with their origin", async () => {
    const r = await repoRegistry();
    expect(r.get('greeting.compose')).toBeDefined();
    expect(r.get('greeting.send')).toBeDefined();
    expect(r.originOf('greeting.compose')).toBe('./plugins/greeting.js');
  });

  it('greeting.compose builds a caption from a template and a contact', async () => {
    const r = await repoRegistry();
    const compose = r.get('greeting.compose')!;
    const { ctx } = createActionTestContext({ client: noClient });
    const input = compose.input.parse({
      template: 'Hello {name}, code {code}',
      contact: { name: 'Alice', code: 7, phone: '+7 900 111-22-33' },
    });
    expect(await compose.run(ctx, input)).toEqual({ caption: 'Hello Alice, code 7', chatId: '79001112233@c.us' });
    expect(await compose.run(ctx, compose.input.parse({ contact: { name: 'Bob' } }))).toEqual({ caption: 'Hello, Bob!' });
    await expect(compose.run(ctx, compose.input.parse({ template: 'Hi {nickname}', contact: { name: 'Bob' } }))).rejects.toThrow(
      "contact has no 'nickname' for the template (fields: name); add a fallback to allow it",
    );
    expect(
      await compose.run(ctx, compose.input.parse({ template: 'Hi {nickname}', contact: { name: 'Bob' }, fallback: 'friend' })),
    ).toEqual({
      caption: 'Hi friend',
    });
    await expect(compose.run(ctx, compose.input.parse({ template: '{name}'.repeat(300), contact: { name: 'Alice' } }))).rejects.toThrow(
      /more than the 1024/,
    );
    expect(compose.input.safeParse({ contact: 'Bob' }).success).toBe(false);
    expect(compose.input.safeParse({ contact: { name: 'x' }, extra: 1 }).success).toBe(false);
  });

  it('greeting.send sends through ctx.client once per item, even when the attempt is repeated, and not in a dry run', async () => {
    const r = await repoRegistry();
    const send = r.get('greeting.send')!;
    const sent: unknown[] = [];
    const client = {
      sendFileByUrl: async (req: unknown) => {
        sent.push(req);
        return { idMessage: `id-${sent.length}` };
      },
    } as unknown as InstanceApi;
    const input = send.input.parse({
      contact: { name: 'Alice', phone: 79001112233 },
      urlFile: 'https://files.example/card.png',
      fileName: 'card.png',
    });
    // The repeated attempt: a second context over the same store (what a restart sees).
    const store = createMemoryStore();
    const first = await send.run(createActionTestContext({ client, store }).ctx, input);
    const again = await send.run(createActionTestContext({ client, store }).ctx, input);
    expect(first).toEqual({ caption: 'Hello, Alice!', chatId: '79001112233@c.us', idMessage: 'id-1' });
    expect(again).toEqual(first);
    expect(sent).toEqual([
      { chatId: '79001112233@c.us', urlFile: 'https://files.example/card.png', fileName: 'card.png', caption: 'Hello, Alice!' },
    ]);
    expect(await send.run(createActionTestContext({ client, dryRun: true }).ctx, input)).toEqual({
      caption: 'Hello, Alice!',
      chatId: '79001112233@c.us',
      dryRun: true,
    });
    expect(sent).toHaveLength(1);
  });

  it('flows using plugin actions are checked against the plugin schema', async () => {
    const registry = await repoRegistry();
    const dir = tempProject({
      'f.yaml': `name: greet
inputs: { contacts: { value: [{ name: Alice }] } }
steps:
  - id: compose
    uses: greeting.compose
    forEach: \${{ inputs.contacts }}
    with: { contact: "\${{ item }}", template: "Hi {name}" }
  - id: bad
    uses: greeting.compse
  - id: bad2
    uses: greeting.compose
    with: { contact: "Alice", templat: x }
`,
    });
    expect(() => loadFlowFile(path.join(dir, 'f.yaml'), { registry, baseDir: dir })).toThrow(
      [
        "f.yaml:9:11 steps[1].uses: unknown action 'greeting.compse' (did you mean 'greeting.compose'?)",
        "f.yaml:12:22 steps[2].with.contact: 'contact' must be an object of scalar fields (a CSV row, for example) (action 'greeting.compose')",
        "f.yaml:12:31 steps[2].with.templat: unknown key 'templat' for action 'greeting.compose' (did you mean 'template'?); it takes template, contact, fallback",
      ]
        .map((l) => `${path.join(dir, l.split(':')[0]!)}:${l.split(':').slice(1).join(':')}`)
        .join('\n'),
    );
  });
});

describe('loadPlugins errors name the plugin', () => {
  it('PLUGIN_LOAD_FAILED: missing file, syntax error, missing package', async () => {
    const dir = tempProject({ 'plugins/broken.js': 'export default {\n' });
    const expectCode = async (spec: string, code: string, re: RegExp) => {
      const err = await loadPlugins([spec], dir, builtinRegistry()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(FlowError);
      expect((err as FlowError).code).toBe(code);
      expect((err as FlowError).message).toMatch(re);
    };
    await expectCode(
      './plugins/missing.js',
      'PLUGIN_LOAD_FAILED',
      /^plugin '\.\/plugins\/missing\.js' could not be loaded: file not found: /,
    );
    await expectCode('./plugins/broken.js', 'PLUGIN_LOAD_FAILED', /^plugin '\.\/plugins\/broken\.js' could not be loaded: /);
    await expectCode(
      'msgflow-plugin-that-does-not-exist',
      'PLUGIN_LOAD_FAILED',
      /package 'msgflow-plugin-that-does-not-exist' is not installed/,
    );
  });

  it('PLUGIN_INVALID: no actions, a bad action, a name clash', async () => {
    const dir = tempProject({
      'none.mjs': 'export const x = 1;\n',
      'bad.mjs': "export const actions = [{ name: 'ok.one', description: 'd', input: {}, output: { description: 'o' }, run() {} }];\n",
      'clash.mjs': `import { z } from 'zod';\nexport default { actions: [{ name: 'log', description: 'd', input: z.object({}), output: { description: 'o' }, async run() {} }] };\n`,
    });
    // zod must resolve from the temp project as it would from a user's project.
    mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
    const { symlinkSync } = await import('node:fs');
    symlinkSync(path.join(REPO, 'node_modules/zod'), path.join(dir, 'node_modules/zod'));
    writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}');
    const r = builtinRegistry();
    await expect(loadPlugins(['./none.mjs'], dir, r)).rejects.toThrow(/^plugin '\.\/none\.mjs': must export \{ actions: \[\.\.\.\] \}/);
    await expect(loadPlugins(['./bad.mjs'], dir, r)).rejects.toThrow(
      "plugin './bad.mjs': actions[0]: action 'ok.one': input must be a zod 4 schema (import { z } from 'msgflow')",
    );
    await expect(loadPlugins(['./clash.mjs'], dir, r)).rejects.toThrow(
      "plugin './clash.mjs': action 'log' is already registered by built-in",
    );
  });

  it('loads a plugin by npm package name, resolved from the project directory', async () => {
    const dir = tempProject({
      'node_modules/msgflow-plugin-hello/package.json': '{"name":"msgflow-plugin-hello","type":"module","main":"index.js"}',
      'node_modules/msgflow-plugin-hello/index.js': `import { z } from 'zod';\nexport const actions = [{ name: 'hello.say', description: 'Says hi', input: z.object({ to: z.string() }), output: { description: 'string' }, async run(ctx, input) { return 'hi ' + input.to; } }];\n`,
    });
    const { symlinkSync } = await import('node:fs');
    symlinkSync(path.join(REPO, 'node_modules/zod'), path.join(dir, 'node_modules/zod'));
    const r = builtinRegistry();
    await loadPlugins(['msgflow-plugin-hello'], dir, r);
    const a = r.get('hello.say')!;
    expect(await a.run(createActionTestContext({ client: noClient }).ctx, a.input.parse({ to: 'Bob' }))).toBe('hi Bob');
    expect(r.originOf('hello.say')).toBe('msgflow-plugin-hello');
  });
});
