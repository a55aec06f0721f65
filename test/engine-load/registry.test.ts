import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { API_METHODS } from '../../src/api/methods.js';
import { FlowError } from '../../src/api/errors.js';
import { defineAction } from '../../src/engine/action.js';
import { createRegistry } from '../../src/engine/registry/registry.js';
import { registerBuiltins } from '../../src/engine/registry/builtins.js';
import { builtinRegistry } from './helpers.js';
import { createActionTestContext } from '../../src/actions/testing.js';
import type { InstanceApi } from '../../src/api/types.js';

describe('registry', () => {
  it('has one built-in action per API method, plus log', () => {
    const r = builtinRegistry();
    expect(r.list().map((a) => a.name)).toEqual([...API_METHODS, 'log'].sort((a, b) => a.localeCompare(b)));
    for (const m of API_METHODS) expect(r.originOf(m)).toBe('built-in');
  });

  it('suggests close names', () => {
    const r = builtinRegistry();
    expect(r.suggest('chekAccount')).toBe('checkAccount');
    expect(r.suggest('CheckAccount')).toBe('checkAccount');
    expect(r.suggest('sendFile')).toBe('sendFileByUrl');
    expect(r.suggest('zzzzzz')).toBeUndefined();
  });

  it('refuses malformed definitions and duplicate names', () => {
    const r = createRegistry();
    registerBuiltins(r);
    const ok = defineAction({ name: 'x.y', description: 'd', input: z.object({}), output: { description: 'o' }, run: async () => 1 });
    r.register(ok, 'my-plugin');
    expect(() => r.register(ok, 'other')).toThrow("plugin 'other': action 'x.y' is already registered by my-plugin");
    expect(() => r.register({ ...ok, name: 'bad name' }, 'p')).toThrow(/action name "bad name" must be/);
    expect(() => r.register({ ...ok, name: 'z', input: { parse() {} } as never }, 'p')).toThrow(/input must be a zod 4 schema/);
    expect(() => r.register({ ...ok, name: 'z', run: undefined as never }, 'p')).toThrow(FlowError);
  });

  it('API-method actions call the instance client with the parsed input and the abort signal', async () => {
    const r = builtinRegistry();
    const calls: unknown[] = [];
    const client = {
      checkAccount: async (req: unknown, opts?: { signal?: AbortSignal }) => {
        calls.push([req, opts?.signal === ctx.signal]);
        return { exist: false, chatId: '' };
      },
    } as unknown as InstanceApi;
    const { ctx } = createActionTestContext({ client });
    const action = r.get('checkAccount')!;
    const input = action.input.parse({ phoneNumber: '79001112233' });
    expect(await action.run(ctx, input)).toEqual({ exist: false, chatId: '' });
    expect(calls).toEqual([[{ phoneNumber: 79001112233, force: false }, true]]);
    expect(action.input.safeParse({ phoneNumber: 1, chatID: 'x' }).success).toBe(false);
  });

  it('log writes to the run logger and accepts numbers', async () => {
    const r = builtinRegistry();
    const { ctx, logs } = createActionTestContext({ client: {} as InstanceApi });
    const log = r.get('log')!;
    expect(await log.run(ctx, log.input.parse({ message: 3, level: 'warn', fields: { a: 1 } }))).toEqual({ message: '3', level: 'warn' });
    expect(await log.run(ctx, log.input.parse({ message: 'hi' }))).toEqual({ message: 'hi', level: 'info' });
    expect(logs).toEqual(['warn 3 {"a":1}', 'info hi']);
  });
});
