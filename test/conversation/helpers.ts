import path from 'node:path';
import { loadFlowFile, type LoadFlowOptions } from '../../src/engine/flow/load.js';
import type { Flow } from '../../src/engine/flow/types.js';
import type { Conversation } from '../../src/engine/conversation/schema.js';
import { evaluateTemplate } from '../../src/engine/expr/template.js';
import type { AdvanceContext } from '../../src/engine/conversation/transition.js';
import { valueParsers } from '../../src/engine/conversation/validators.js';
import type { DialogMessage } from '../../src/engine/conversation/message.js';
import { normalisePhone } from '../../src/actions/phone.js';
import { builtinRegistry, tempProject } from '../engine-load/helpers.js';

export const REPO = path.resolve(import.meta.dirname, '../..');
/** The menu bot example (flows/welcome.yaml). */
export const MENU_BOT = path.join(REPO, 'flows/welcome.yaml');

export function opts(dir: string): LoadFlowOptions {
  return { registry: builtinRegistry(), baseDir: dir, instances: ['default'], env: {} };
}

/** Loads a flow file written into a temp project. */
export function loadYaml(yaml: string): Flow {
  const dir = tempProject({ 'flows/f.yaml': yaml });
  return loadFlowFile(path.join(dir, 'flows/f.yaml'), opts(dir));
}

/** The error lines of a flow file, with its path cut to `F`. */
export function errorLines(yaml: string): string[] {
  const dir = tempProject({ 'flows/f.yaml': yaml });
  const file = path.join(dir, 'flows/f.yaml');
  try {
    loadFlowFile(file, opts(dir));
  } catch (e) {
    return (e as { errors: { message: string }[] }).errors.map((x) => x.message.split(file).join('F'));
  }
  throw new Error('expected the flow to be invalid');
}

/** The conversation of a loaded flow, as its dialog step gets it (parsed). */
export function conversationOf(flow: Flow): Conversation {
  return flow.conversation!;
}

/** What the runtime hands the pure transition: the engine's template evaluation, the phone rule. */
export function advanceContext(now: number, flow = 'f'): AdvanceContext {
  return {
    now,
    flow,
    render: (v, scope) =>
      evaluateTemplate(v, {
        inputs: {},
        env: {},
        steps: {},
        run: { id: 'r', flow, startedAt: 0 },
        local: { url: 'http://local' },
        ...scope,
      }),
    parsers: valueParsers((t) => {
      const p = normalisePhone(t);
      return p.ok ? p.digits : undefined;
    }),
  };
}

let counter = 0;
/** A text message of the chat. */
export function says(text: string, chatId = '79001112233@c.us'): DialogMessage {
  return { id: `M${++counter}`, chatId, text, kind: 'text', typeMessage: 'textMessage', choices: [] };
}
