import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const ROOT = path.resolve(import.meta.dirname, '../..');
const MAIN = path.join(ROOT, 'src/cli/main.ts');
// Absolute, so the child resolves tsx from msgflow's node_modules whatever its cwd.
const TSX = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const DIST_MAIN = path.join(ROOT, 'dist/cli/main.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * How to start the CLI: the compiled dist/ when it is newer than every source
 * file (`npm test` builds it first), else the sources through tsx. Both are
 * the same program; dist starts several times faster, which matters for the
 * tests that race processes over many trials.
 */
export const ENTRY: string[] = existsSync(DIST_MAIN) && statSync(DIST_MAIN).mtimeMs >= newestMtime(path.join(ROOT, 'src')) ? [DIST_MAIN] : ['--import', TSX, MAIN];

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `msgflow ARGS` from sources in `cwd`, as a user would from a shell (no TTY). */
export function msgflow(args: string[], cwd: string, env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...ENTRY, ...args], {
      cwd,
      env: { ...process.env, ...env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts a long-running `msgflow` command and resolves once `ready` appears in its output. */
export function msgflowDaemon(args: string[], cwd: string, ready: RegExp, env: Record<string, string> = {}): Promise<{ child: ChildProcess; output: () => string; match: RegExpMatchArray }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...ENTRY, ...args], { cwd, env: { ...process.env, ...env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`not ready in time; output:\n${out}`));
    }, 60_000);
    const onData = (d: Buffer) => {
      out += d;
      const m = out.match(ready);
      if (m) {
        clearTimeout(timer);
        resolve({ child, output: () => out, match: m });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ready; output:\n${out}`));
    });
  });
}

export function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once('exit', (c) => r(c))));
}

/** A throw-away project folder with a config.yaml, flows and data files. */
export function project(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-cli-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

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
