/** The CLI in-process through runCli, as the developers' guide asks, with its output captured. */
import { PassThrough } from 'node:stream';
import path from 'node:path';
import { runCli } from '../../src/cli/main.js';
import type { Io } from '../../src/cli/output.js';

export interface InprocResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `msgflow ARGS -c DIR/config.yaml`, in this process. */
export async function cli(args: string[], dir: string): Promise<InprocResult> {
  let stdout = '';
  let stderr = '';
  const outStream = new PassThrough();
  const errStream = new PassThrough();
  outStream.on('data', (d) => (stdout += d));
  errStream.on('data', (d) => (stderr += d));
  const io: Io = {
    out: (t) => void (stdout += `${t}\n`),
    err: (t) => void (stderr += `${t}\n`),
    stdout: outStream,
    stderr: errStream,
  };
  const withConfig = args.includes('--help') ? args : [...args, '-c', path.join(dir, 'config.yaml')];
  const code = await runCli(withConfig, io);
  return { code, stdout, stderr };
}
