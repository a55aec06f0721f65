/** Throw-away project folders (config.yaml, flows, data) and the config snippets the CLI tests share. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A temp folder holding `files` (relative path → text). */
export function project(files: Record<string, string> = {}, prefix = 'msgflow-test-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  for (const [name, text] of Object.entries(files)) writeProjectFile(dir, name, text);
  return dir;
}

export function writeProjectFile(dir: string, rel: string, text: string): string {
  const file = path.join(dir, rel);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

/** Async twin of writeProjectFile for tests already in async code. */
export async function writeData(dir: string, rel: string, text: string): Promise<string> {
  const file = path.join(dir, rel);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  return file;
}

/**
 * config.yaml for a `default` instance that is never reached (port 9 refuses),
 * for commands that only touch the store, flows and plugins.
 */
export function remoteConfig(token: string, extra = ''): string {
  return `instances:
  default:
    apiUrl: http://127.0.0.1:9
    idInstance: "1101000001"
    apiTokenInstance: ${token}
${extra}`;
}

/** config.yaml whose `default` instance is the in-process local service (instance 1101000001). */
export const LOCAL_CONFIG = `instances:
  default:
    apiUrl: local
local:
  port: 0
  network:
    accounts:
      - { phone: 79001112233, username: "@alice", name: Alice }
      - { phone: 79005550000, hidden: true }
    deliveredAfterMs: 0
  instances:
    - idInstance: "1101000001"
      apiTokenInstance: cli-test-token-9f3a
      sendIntervalMs: 500
`;
