/**
 * Seed files: chats and messages that exist before the first request, for
 * tests and demos. Named by `local.instances[].seed` (relative to the config
 * file), YAML or JSON, loaded once into an instance with an empty history.
 *
 * @example
 * chats:
 *   - chatId: "79001112233@c.us"
 *     messages:
 *       - { type: incoming, typeMessage: textMessage, textMessage: "Hi", timestamp: "2026-01-01T09:00:00Z" }
 *       - { type: outgoing, typeMessage: documentMessage, fileName: report.pdf, statusMessage: read }
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { combineErrors, ConfigError, MsgflowError } from '../api/errors.js';
import { issuesToConfigErrors } from '../util/config-issues.js';
import { parseYamlSource } from '../util/yaml-source.js';
import { MessageInputSchema, type ParsedMessageInput } from './message-input.js';

const SeedShape = z.strictObject({
  chats: z.array(z.strictObject({ chatId: z.string(), messages: z.array(z.record(z.string(), z.unknown())).default([]) })).default([]),
});

/** Reads and validates a seed file; errors name file:line:col and the key path. */
export async function loadSeedFile(file: string, displayName = file): Promise<ParsedMessageInput[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new ConfigError('CONFIG_NOT_FOUND', { file: displayName }, { cause: e });
  }
  return parseSeed(text, displayName);
}

export function parseSeed(text: string, file: string): ParsedMessageInput[] {
  let src;
  try {
    src = parseYamlSource(text, file, { maxBytes: 64 * 1024 * 1024 });
  } catch (e) {
    if (e instanceof MsgflowError) throw new ConfigError(e.code, e.params as Record<string, unknown>, { cause: e });
    throw e;
  }
  const shape = SeedShape.safeParse(src.value ?? {});
  if (!shape.success) throw firstError(issuesToConfigErrors(shape.error.issues, src.locate));
  const out: ParsedMessageInput[] = [];
  shape.data.chats.forEach((chat, i) => {
    chat.messages.forEach((raw, j) => {
      const r = MessageInputSchema.safeParse({ chatId: chat.chatId, ...raw });
      if (!r.success) {
        const issues = r.error.issues.map((iss) => ({
          ...iss,
          path: iss.path[0] === 'chatId' && !('chatId' in raw) ? ['chats', i, 'chatId'] : ['chats', i, 'messages', j, ...iss.path],
        }));
        throw firstError(issuesToConfigErrors(issues as z.core.$ZodIssue[], src.locate));
      }
      out.push(r.data);
    });
  });
  // Oldest first, so that "newest first" in history matches the timestamps.
  return out.sort((a, b) => toMs(a.timestamp) - toMs(b.timestamp));
}

function toMs(t: ParsedMessageInput['timestamp']): number {
  if (t === undefined) return Number.MAX_SAFE_INTEGER;
  return typeof t === 'number' ? t * 1000 : Date.parse(t);
}

function firstError(errors: ConfigError[]): ConfigError {
  return combineErrors(errors, (first) => new ConfigError('CONFIG_INVALID', first.params as Record<string, unknown>));
}
