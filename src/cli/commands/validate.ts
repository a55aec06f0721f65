import { ConfigError, MsgflowError } from '../../runtime/present.js';
import { displayPath, loadConfig, resolveFromConfig, validateFlowFiles, validationTargets } from '../../runtime/frontend.js';
import { validateFlowTestFiles } from '../../runtime/flow-test/validate.js';
import { buildRegistry } from '../../runtime/registry.js';
import { flowSource } from '../../runtime/project-engine.js';
import { parseCommand, parseLogLevel } from '../args.js';
import { EXIT } from '../exit-codes.js';
import { cliPath, configOptions, type Io } from '../output.js';

/**
 * `msgflow validate [FILE...]`: config.yaml first (flows cannot be checked
 * without its instances and plugins), then every flow file and flow test
 * file. Prints every error as `file:line:col key.path: reason`.
 */
export async function validate(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseCommand('validate', argv);
  parseLogLevel(values['log-level']);
  const configFile = values.config ?? 'config.yaml';
  let config;
  try {
    config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    for (const line of e.message.split('\n')) io.err(line);
    io.err(`${configFile}: invalid; flows not checked`);
    return EXIT.FAILURE;
  }
  let registry;
  try {
    registry = await buildRegistry(config);
  } catch (e) {
    if (!(e instanceof MsgflowError)) throw e;
    io.err(`${configFile} plugins: ${e.message}`);
    return EXIT.FAILURE;
  }
  const flowsDir = resolveFromConfig(config, config.flowsDir);
  const targets = positionals.length > 0 ? positionals.map((p) => cliPath(io, p)) : [flowsDir];
  // A flow test is known by its name (*.test.yaml), however it was named: a shell glob lists it with the flows.
  const { flows, tests } = validationTargets(targets);
  const options = flowSource(config, registry).options;
  const results = [...validateFlowFiles(flows, options, [flowsDir]), ...validateFlowTestFiles(tests, flowsDir, options)];
  let errors = 0;
  for (const r of results) {
    for (const e of r.errors) {
      errors++;
      io.err(e.message);
    }
    if (r.errors.length === 0) io.out(`ok  ${r.file}`);
  }
  if (results.length === 0) io.err(`no flow files found in ${targets.map((t) => displayPath(t, config.cwd)).join(', ')}`);
  const bad = results.filter((r) => r.errors.length > 0).length;
  const counted = `${flows.length} flow file(s)${tests.length > 0 ? `, ${tests.length} flow test file(s)` : ''}`;
  io.out(`${displayPath(config.file, config.cwd)}: ok; ${counted}, ${bad} with errors, ${errors} error(s)`);
  return errors > 0 || results.length === 0 ? EXIT.FAILURE : EXIT.OK;
}
