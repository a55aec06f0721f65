#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm install` (the prepare script).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  process.stderr.write('msgflow: dist/ is missing; run `npm install` (or `npm run build`) in the msgflow folder first\n');
  process.exit(1);
}
const { runCli } = await import(main.href);
process.exitCode = await runCli(process.argv.slice(2));
