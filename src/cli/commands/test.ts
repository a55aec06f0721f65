import { displayPath, loadConfig } from '../../runtime/frontend.js';
import { formatMismatches } from '../../runtime/flow-test/match.js';
import { runFlowTests } from '../../runtime/flow-test/suite.js';
import type { CaseResult } from '../../runtime/flow-test/run.js';
import { parseCommand } from '../args.js';
import { EXIT } from '../exit-codes.js';
import { cliPath, configOptions, type Io } from '../output.js';

/**
 * `msgflow test [FILE...]`: runs flow tests (flows/*.test.yaml) against the
 * in-process local service on a virtual clock, like a test runner: one line
 * per case, a diff under a failed one, `N passed, M failed` last.
 */
export async function test(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseCommand('test', argv);
  const config = loadConfig((values.config as string | undefined) ?? 'config.yaml', configOptions(io));
  const json = Boolean(values.json);
  const show = (r: CaseResult) => {
    if (json) return;
    const where = displayPath(r.file, config.cwd);
    const timing = r.virtualMs === undefined ? `${r.wallMs} ms` : `${r.wallMs} ms, ${formatVirtual(r.virtualMs)} virtual`;
    io.out(`${r.passed ? 'PASS' : 'FAIL'}  ${where} › ${r.name} (${timing})`);
    if (r.error) io.out(`      ${r.error}`);
    if (r.mismatches.length > 0) io.out(formatMismatches(r.mismatches));
  };
  const summary = await runFlowTests({
    config,
    files: positionals.length > 0 ? positionals.map((p) => cliPath(io, p)) : undefined,
    filter: values.filter as string | undefined,
    onResult: show,
  });
  if (json) io.out(JSON.stringify(summary, null, 2));
  else {
    for (const f of summary.untested) io.out(`no flow test case runs ${f} (a case names its flow with flow:)`);
    if (summary.results.length === 0) io.out('no flow test cases found (flows/*.test.yaml)');
    io.out(`${summary.passed} passed, ${summary.failed} failed`);
  }
  return summary.failed > 0 || summary.results.length === 0 ? EXIT.FAILURE : EXIT.OK;
}

function formatVirtual(ms: number): string {
  if (ms >= 3_600_000) return `${(ms / 3_600_000).toFixed(1).replace(/\.0$/, '')} h`;
  if (ms >= 60_000) return `${(ms / 60_000).toFixed(1).replace(/\.0$/, '')} min`;
  return `${(ms / 1000).toFixed(1).replace(/\.0$/, '')} s`;
}
