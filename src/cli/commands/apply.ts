import type { Flow } from '../../engine/flow/types.js';
import { flowHash, readPlan } from '../../runtime/frontend.js';
import { MsgflowError } from '../../runtime/present.js';
import { parseCommand } from '../args.js';
import { UsageError } from '../exit-codes.js';
import { cliPath, type Io } from '../output.js';
import { execute } from './run.js';

/**
 * `msgflow apply PLAN`: runs exactly the plan `msgflow run CAMPAIGN --plan
 * PLAN` wrote: its flow with its inputs, the broadcast sending the planned
 * recipients from the planned instances with the planned variants. Refused
 * when an input changed since (the flow file here; the recipients, the pool
 * and the opt-outs by the step itself, before it sends anything). Resumes an
 * interrupted apply of the same plan, and runs in the daemon like msgflow run.
 */
export async function apply(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseCommand('apply', argv);
  if (positionals.length !== 1) throw new UsageError(`apply expects exactly one plan FILE, got ${positionals.length}`);
  const shown = positionals[0]!;
  const path = cliPath(io, shown);
  const head = await readPlan(path, shown);
  const check = (flow: Flow) => {
    if (flowHash(flow) !== head.fingerprint.flow)
      throw new MsgflowError('PLAN_OUTDATED', {
        file: shown,
        changed: `the flow file ${flow.file}`,
        createdAt: head.createdAt,
        flow: head.flow,
      });
  };
  return execute({ name: head.flow, inputs: head.inputs, plan: { mode: 'apply', path }, check }, values, io);
}
