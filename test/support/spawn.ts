/**
 * `msgflow` as a child process, for the tests whose subject is the process:
 * signals, kill -9, a crash, a second process racing the first. Everything
 * else runs in-process (./cli.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CliResult } from './cli.js';
import { waitFor } from './wait.js';

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
 * How to start the CLI: the compiled dist/ when its newest file is newer than
 * every source file (`npm test` builds it first; an incremental build
 * rewrites only what changed), else the sources through tsx. Both are the
 * same program; dist starts several times faster.
 */
const DIST_FRESH = existsSync(DIST_MAIN) && newestMtime(path.join(ROOT, 'dist')) >= newestMtime(path.join(ROOT, 'src'));
export const ENTRY: string[] = DIST_FRESH ? [DIST_MAIN] : ['--import', TSX, MAIN];

/**
 * How a child process written in plain JavaScript loads the module
 * `src/<rel>.ts`, by the same rule as ENTRY: the compiled dist/<rel>.js when
 * fresh, else the source through tsx (execArgv).
 */
export function srcModuleForChild(rel: string): { execArgv: string[]; url: string } {
  return DIST_FRESH
    ? { execArgv: [], url: pathToFileURL(path.join(ROOT, 'dist', `${rel}.js`)).href }
    : { execArgv: ['--import', TSX], url: pathToFileURL(path.join(ROOT, 'src', `${rel}.ts`)).href };
}

export interface Proc {
  child: ChildProcess;
  /** stdout and stderr interleaved, as a terminal would show them. */
  output(): string;
  stdout(): string;
  stderr(): string;
  /** The exit code; null when killed by a signal. */
  exited: Promise<number | null>;
  /** Resolves the first match of `re` in the output (fails with the output after `timeoutMs`). */
  waitForOutput(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** SIGKILL unless already gone; resolves once it is. */
  kill(): Promise<void>;
}

const live = new Set<ChildProcess>();
// A failed test must not leave a daemon behind.
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Starts `msgflow ARGS` in `cwd` (no TTY, NO_COLOR) with `env` over this process's environment. */
export function spawnCli(args: string[], cwd: string, env: Record<string, string> = {}): Proc {
  return spawnProcess(process.execPath, [...ENTRY, ...args], cwd, env, `msgflow ${args.join(' ')}`);
}

/**
 * Starts `command ARGS` as spawnCli starts msgflow, for a test whose subject
 * is another process: e.g. `process.execPath` with a fixture script and the
 * module `srcModuleForChild` names, or `bash -c 'ulimit …; exec "$0" "$@"'`
 * in front of it.
 */
export function spawnProcess(command: string, args: string[], cwd: string, env: Record<string, string> = {}, label = command): Proc {
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let all = '';
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => ((out += d), (all += d)));
  child.stderr!.on('data', (d) => ((err += d), (all += d)));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    // 'close': the pipes are drained too, so output() is complete.
    child.on('close', (code) => {
      live.delete(child);
      resolve(code);
    });
  });
  let gone = false;
  void exited.then(() => (gone = true));
  return {
    child,
    output: () => all,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForOutput: async (re, timeoutMs = 90_000) => {
      const what = `${re} in the output of ${label}`;
      return waitFor(what, () => (gone && !re.test(all) ? Promise.reject(new Error(`exited before ${what}:\n${all}`)) : re.exec(all)), {
        timeoutMs,
        context: () => all,
      });
    },
    kill: async () => {
      if (!gone) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Runs `msgflow ARGS` as a process to its end. */
export async function runProcess(args: string[], cwd: string, env: Record<string, string> = {}): Promise<CliResult> {
  const p = spawnCli(args, cwd, env);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}
