/**
 * Runs flow test cases: each case gets a fresh in-process local service (in a
 * temporary data directory), a memory store, the project's action registry,
 * the real engine and msgflow start's notification consumer, all on one
 * VirtualClock that jumps ahead whenever the run is only waiting. Every path
 * an action resolves is in the case's sandbox, a copy-on-write view of the
 * project (sandbox.ts): a test reads the project's files and never writes them.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createReadStream } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { MsgflowError } from '../../api/errors.js';
import { createClient } from '../../client/client.js';
import type { ClientOptions } from '../../client/options.js';
import type { Transport } from '../../client/transport.js';
import { resolveFromConfig, type Config } from '../../config/load.js';
import { createBus, type EngineBus } from '../../engine/events.js';
import { findFlow, loadFlows } from '../../engine/flow/load.js';
import { parseDuration } from '../../util/duration.js';
import { resolveInputs } from '../../engine/flow/inputs.js';
import type { Flow, FlowNotificationTrigger } from '../../engine/flow/types.js';
import type { ActionRegistry } from '../../engine/registry/registry.js';
import type { Engine, RunHandle } from '../../engine/run/types.js';
import type { RunRecord } from '../../store/types.js';
import { triggerMatches } from '../../engine/notify/match.js';
import { parseNotification } from '../../engine/notify/body.js';
import { startCaseConsumer } from './consumer.js';
import { runsMismatches, startOthers } from './others.js';
import { runScript } from './script.js';
import { identityOf } from '../clients.js';
import type { Message } from '../../api/types.js';
import { ProjectSandbox } from './sandbox.js';
import { messageInputOf } from '../../local/notify/bodies.js';
import { MessageInputSchema, type MessageInput } from '../../local/message-input.js';
import { LocalSchema, type LocalConfig } from '../../local/config.js';
import { createLocalService, type LocalService } from '../../local/service.js';
import { createMediaStore } from '../../local/media/file-store.js';
import type { MediaStore } from '../../local/media/types.js';
import { createStore } from '../../store/create.js';
import type { EngineStore } from '../../store/types.js';
import { VirtualClock } from '../../util/virtual-clock.js';
import { createInProcessTransport } from '../in-process-transport.js';
import { createProjectEngine, flowSource, localUrlOf, secretsOf } from '../project-engine.js';
import { interceptApi, type ApiInterceptor, type InterceptedApi } from '../../client/interceptors.js';
import { faultInterceptor } from './faults.js';
import { buildRegistry } from '../registry.js';
import { match, type Mismatch } from './match.js';
import type { FlowTestCase } from './schema.js';

export interface CaseResult {
  file: string;
  name: string;
  flow: string;
  passed: boolean;
  /** Run status, when the run ended. */
  status?: string;
  runId?: string;
  /** Virtual time the run took, ms. */
  virtualMs?: number;
  /** Wall time of the case, ms. */
  wallMs: number;
  mismatches: Mismatch[];
  /** An error that kept the case from running (bad flow, unknown input...). */
  error?: string;
}

interface Recorded {
  type: string;
  [k: string]: unknown;
}

const EVENT_TYPES = [
  'run:started',
  'run:finished',
  'run:failed',
  'run:waiting',
  'run:resumed',
  'run:interrupted',
  'step:started',
  'step:finished',
  'step:retry',
  'action:event',
  'log',
] as const;

/** Wall-time cap of one case: a case is a unit test, not a soak test. */
const WALL_LIMIT_MS = 120_000;

/** What one case runs on: the service, the engine, the flow and the events seen. */
interface CaseRig {
  service: LocalService;
  store: EngineStore;
  bus: EngineBus;
  /** The first local instance (what `expect.local` and `replies` use). */
  target: LocalInst;
  engine: Engine;
  flow: Flow;
  /** The case's other flows (`flows:`). */
  others: Flow[];
  events: Recorded[];
  /** The local instance serving a config instance (its idInstance). */
  localOf(name: string): string;
  /** The notification consumer's client of a config instance (on the service, not holding the clock). */
  consumerClient(name: string): InterceptedApi;
}

export async function runFlowTestCase(config: Config, registry: ActionRegistry, testFile: string, c: FlowTestCase): Promise<CaseResult> {
  const wallStart = performance.now();
  const result: CaseResult = { file: testFile, name: c.name, flow: c.flow, passed: false, wallMs: 0, mismatches: [] };
  const testDir = path.dirname(testFile);
  const caseDir = await mkdtemp(path.join(tmpdir(), 'msgflow-test-'));
  const sandbox = new ProjectSandbox(config.baseDir, caseDir);
  const startAt = Date.parse(c.start);
  // The case's zone is its clock's: windows and schedules read it there, so cases in one process keep their own.
  const clock = new VirtualClock(startAt, { timeZone: c.timezone });
  const cleanups: (() => Promise<unknown> | void)[] = [];
  try {
    const rig = await rigCase(config, registry, c, { testDir, caseDir, sandbox, clock, cleanups });
    clock.start();
    cleanups.push(() => clock.stop());
    for (const r of c.replies ?? []) {
      void clock.sleep(parseDuration(r.after)!).then(() =>
        admin(rig.service, rig.target, 'incoming', 'POST', {
          chatId: `${r.from}@c.us`,
          typeMessage: 'textMessage',
          textMessage: r.text,
        }).catch(() => undefined),
      );
    }
    // msgflow start's consumer, as live: the event and the replies reach the flow as the service's notifications.
    const { store, bus, engine, flow } = rig;
    const others = startOthers({ engine, store, bus, clock, others: rig.others });
    cleanups.push(() => others.stop());
    const consumer = await startCaseConsumer({
      config,
      flow,
      others: rig.others,
      store,
      bus,
      clock,
      engine: others.engine,
      clientFor: rig.consumerClient,
      localOf: rig.localOf,
    });
    cleanups.push(() => consumer.stop());
    if (c.script) return await scriptCase(result, rig, c, config, clock);
    const handle = c.event ? await deliverEvent(rig, c, consumer.started, clock) : await engine.start(flow, { trigger: 'manual' });
    result.runId = handle.runId;
    // The case's run, then the runs of its other flows that its alerts and notifications started.
    const ended = await untilEnded(
      handle.done.then(async (r) => {
        await others.settle();
        return r;
      }),
      c,
      clock,
      rig.events,
    );
    if (typeof ended === 'string') {
      result.error = ended;
      return result;
    }
    await clock.stop();
    result.status = ended.status;
    result.virtualMs = (ended.finishedAt ?? clock.now()) - startAt;
    result.mismatches.push(
      ...(await expectationMismatches(c.expect, ended, rig, {
        clock,
        startAt,
        sandbox,
        baseDir: config.baseDir,
        virtualMs: result.virtualMs,
      })),
    );
    result.passed = result.mismatches.length === 0;
    return result;
  } catch (e) {
    result.error = e instanceof Error ? e.message : String(e);
    return result;
  } finally {
    for (const f of cleanups.reverse()) await Promise.resolve(f()).catch(() => undefined);
    await rm(caseDir, { recursive: true, force: true }).catch(() => undefined);
    result.wallMs = Math.round(performance.now() - wallStart);
  }
}

/** A case with a dialog script: its steps, then every run of the flow must have ended with `expect.status`, and `expect.local` hold. */
async function scriptCase(result: CaseResult, rig: CaseRig, c: FlowTestCase, config: Config, clock: VirtualClock): Promise<CaseResult> {
  const instance = rig.flow.on.notification?.instance ?? rig.flow.instance;
  const li = rig.service.config.instances.find((l) => l.idInstance === rig.localOf(instance)) ?? rig.target;
  const history = async (chatId: string): Promise<Message[]> => {
    // The script may just have used getChatHistory's per-second limit: let virtual time pass as a caller would.
    clock.advance(1000);
    return (await api(rig.service, li, 'getChatHistory', {}, { chatId, count: 1000 })) as Message[];
  };
  const out = await runScript(
    {
      flow: rig.flow,
      store: rig.store,
      bus: rig.bus,
      clock,
      identity: identityOf(config, instance),
      deliver: async (m) => (await admin(rig.service, li, 'incoming', 'POST', m, `case '${c.name}' script`)) as Message,
      history,
      queueEmpty: async () => ((await admin(rig.service, li, 'queue', 'GET')) as { pending: unknown[] }).pending.length === 0,
    },
    c,
  );
  await clock.stop();
  result.mismatches.push(...out.mismatches);
  for (const run of out.runs) {
    if (run.status !== c.expect.status)
      result.mismatches.push({ path: `runs[${run.id}].status`, expected: c.expect.status, actual: run.status, note: run.error?.message });
  }
  const last = out.runs.at(-1);
  if (last) Object.assign(result, { runId: last.id, status: last.status });
  result.virtualMs = clock.now() - Date.parse(c.start);
  if (c.expect.local)
    result.mismatches.push(
      ...match(c.expect.local, await localSnapshot(c.expect.local, rig, { clock, startAt: Date.parse(c.start) }), 'local'),
    );
  result.passed = result.mismatches.length === 0;
  return result;
}

interface RigContext {
  testDir: string;
  /** The case's own directory: the local service's data, the sandbox. */
  caseDir: string;
  sandbox: ProjectSandbox;
  clock: VirtualClock;
  cleanups: (() => Promise<unknown> | void)[];
}

/** The case's sandbox, file server, local service, clients and engine, each with its cleanup registered. */
async function rigCase(config: Config, registry: ActionRegistry, c: FlowTestCase, x: RigContext): Promise<CaseRig> {
  const { testDir, caseDir, sandbox, clock, cleanups } = x;
  // Without a local: section, flows still get a `${{ local.url }}` (the default port) for the file server to stand in for.
  const localUrl = localUrlOf(config) ?? 'http://127.0.0.1:7070';
  const staticDir = config.local?.staticDir ? resolveFromConfig(config, config.local.staticDir) : undefined;
  const fileServer = c.files || staticDir ? await serveFiles(c.files ?? {}, testDir, localUrl, staticDir) : undefined;
  if (fileServer) cleanups.push(() => new Promise((r) => fileServer.server.close(r)));

  const local = localConfigFor(config, c, caseDir);
  const service = createLocalService(local, {
    baseDir: config.baseDir,
    clock,
    mediaStore: heldMediaStore(local, clock, fileServer !== undefined),
  });
  await service.start();
  cleanups.push(() => service.close());
  const target = local.instances[0]!;
  if (c.messages) for (const m of c.messages) await admin(service, target, 'incoming', 'POST', m);
  const transportFor = (li: LocalInst) =>
    heldTransport(createInProcessTransport(service, li.idInstance, li.apiTokenInstance), clock, fileServer?.rewrite);
  // The flow's calls of each method, counted across the case's instances: what `faults:` name.
  const faults = faultInterceptor(c.faults ?? [], new Map(), clock);

  const bus = createBus();
  const events: Recorded[] = [];
  for (const type of EVENT_TYPES) bus.on(type, (e: object) => events.push({ type, ...e }));
  const store = createStore({ driver: 'memory', dir: '.' }, caseDir);
  cleanups.push(() => store.close());
  const source = flowSource(config, registry);
  const flow = findFlow(source.dir, c.flow, source.options);
  const others = (c.flows ?? []).map((name) => findFlow(source.dir, name, source.options));
  const secrets = secretsOf(config);
  const engine = createProjectEngine(config, {
    store,
    registry,
    bus,
    clock,
    clientFor: caseClients(config, local, (li) => ({ transport: transportFor(li), clock }), [faults]),
    localUrl,
    // Every path an action resolves is the sandbox's copy: the project is read, never written.
    resolvePath: (base, p) => sandbox.resolvePath(base, p),
    random: () => 0.5,
    // The case's inputs are its flow's; a sub-flow's child resolves its own (its caller's with: gives the rest).
    resolveInputs: (f, overrides) =>
      f.name === flow.name ? caseInputs(f, c, { testDir, caseDir }, overrides) : resolveInputs(f, overrides),
    flowFor: (name) => loadFlows(source.dir, source.options).flows.find((f) => f.name === name),
    secret: (name) => secrets.get(name),
  });
  cleanups.push(() => engine.shutdown());
  const consumerClient = caseClients(config, local, (li) => ({
    transport: createInProcessTransport(service, li.idInstance, li.apiTokenInstance),
    clock,
    rateLimit: false,
  }));
  const localOf = (name: string) => localInstanceOf(config, local, name).idInstance;
  return { service, store, bus, target, engine, flow, others, events, localOf, consumerClient };
}

/** The local instance serving a config instance in a case: its matching local instance, else the first. */
function localInstanceOf(config: Config, local: LocalConfig, name: string): LocalInst {
  const inst = config.instances[name];
  if (!inst) throw new MsgflowError('INSTANCE_UNKNOWN', { name, file: config.file, known: '' });
  return (
    (inst.apiUrl === 'local' && inst.idInstance && local.instances.find((l) => l.idInstance === inst.idInstance)) || local.instances[0]!
  );
}

/**
 * Clients of the config's instances, each on the case's local service (its
 * matching local instance, else the first), with the instance's retries and
 * rate limits unless `over` says otherwise.
 */
function caseClients(
  config: Config,
  local: LocalConfig,
  over: (li: LocalInst) => Pick<ClientOptions, 'transport' | 'clock'> & Partial<ClientOptions>,
  interceptors: readonly ApiInterceptor[] = [],
): (name: string) => InterceptedApi {
  const clients = new Map<string, InterceptedApi>();
  return (name: string): InterceptedApi => {
    let api = clients.get(name);
    if (!api) {
      const li = localInstanceOf(config, local, name);
      const inst = config.instances[name]!;
      const client = createClient({
        apiUrl: 'http://local.invalid',
        idInstance: li.idInstance,
        apiTokenInstance: li.apiTokenInstance,
        retries: inst.retries,
        rateLimits: inst.rateLimits,
        rateLimit: inst.rateLimit,
        ...over(li),
      });
      api = interceptApi(client, interceptors);
      clients.set(name, api);
    }
    return api;
  };
}

/** The run's record once it ends, or why the case gave up on it (virtual timeout, wall-time cap). */
async function untilEnded(done: Promise<RunRecord>, c: FlowTestCase, clock: VirtualClock, events: Recorded[]): Promise<RunRecord | string> {
  let hung: string | undefined;
  const record = await Promise.race([
    done,
    clock.sleep(parseDuration(c.timeout)!).then(() => {
      hung = `the run did not end within ${c.timeout} of virtual time`;
    }),
    new Promise<void>((r) => setTimeout(r, WALL_LIMIT_MS).unref()).then(() => {
      hung ??= `the run did not end within ${WALL_LIMIT_MS / 1000} s of wall time (virtual time: ${new Date(clock.now()).toISOString()})`;
    }),
  ]);
  if (!hung && record) return record;
  const last = events.at(-1);
  return `${hung}${last ? `; last event: ${last.type}${last.step ? ` of step ${String(last.step)}` : ''}${last.reason ? ` (${String(last.reason)})` : ''}` : ''}`;
}

interface CheckContext {
  clock: VirtualClock;
  startAt: number;
  sandbox: ProjectSandbox;
  baseDir: string;
  virtualMs: number;
}

/** Every expectation of the case compared with what the run did. */
async function expectationMismatches(ex: FlowTestCase['expect'], record: RunRecord, rig: CaseRig, x: CheckContext): Promise<Mismatch[]> {
  const ms: Mismatch[] = [];
  ms.push(...match(ex.status, record.status, 'status'));
  if (record.status !== ex.status && record.error)
    ms.push({ path: 'run.error', expected: undefined, actual: record.error, note: 'the run ended with' });
  if (ex.run) ms.push(...match(ex.run, record, 'run'));
  if (ex.steps) {
    const steps = await rig.engine.getSteps(record.id);
    const byId = Object.fromEntries(steps.map((s) => [s.step, s]));
    ms.push(...match(ex.steps, byId, 'steps'));
  }
  if (ex.events) ms.push(...match(ex.events, rig.events, 'events'));
  if (ex.elapsed) {
    const v = x.virtualMs;
    const lo = ex.elapsed.atLeast === undefined ? undefined : parseDuration(ex.elapsed.atLeast)!;
    const hi = ex.elapsed.atMost === undefined ? undefined : parseDuration(ex.elapsed.atMost)!;
    if ((lo !== undefined && v < lo) || (hi !== undefined && v > hi))
      ms.push({ path: 'elapsed', expected: ex.elapsed, actual: formatMs(v) });
  }
  if (ex.local) ms.push(...match(ex.local, await localSnapshot(ex.local, rig, x), 'local'));
  if (ex.runs) ms.push(...(await runsMismatches(ex.runs, rig.engine)));
  for (const rep of ex.reports ?? []) ms.push(...(await reportMismatches(rep, x.sandbox.written(path.resolve(x.baseDir, rep.file)))));
  return ms;
}

/** The local service's state the case's `expect.local` names: contacts, queue, outgoing, chats. */
async function localSnapshot(
  exLocal: NonNullable<FlowTestCase['expect']['local']>,
  rig: CaseRig,
  x: Pick<CheckContext, 'clock' | 'startAt'>,
): Promise<Record<string, unknown>> {
  const { service, target } = rig;
  const { clock } = x;
  const snap: Record<string, unknown> = {};
  if (exLocal.contacts !== undefined || exLocal.phonebook !== undefined)
    Object.assign(snap, await admin(service, target, 'contacts', 'GET'));
  if (exLocal.queue !== undefined) snap.queue = await admin(service, target, 'queue', 'GET');
  if (exLocal.outgoing !== undefined) {
    const minutes = Math.ceil((clock.now() - x.startAt) / 60_000) + 60;
    // The flow may just have used this method's per-second limit: let virtual time pass as a caller would.
    clock.advance(1000);
    snap.outgoing = await api(service, target, 'lastOutgoingMessages', { minutes });
  }
  if (exLocal.chats !== undefined) {
    const chats: Record<string, unknown> = {};
    for (const chatId of Object.keys(exLocal.chats)) {
      clock.advance(1000);
      chats[chatId] = await api(service, target, 'getChatHistory', {}, { chatId, count: 1000 });
    }
    snap.chats = chats;
  }
  return snap;
}

/** One `expect.reports` entry against the file the run wrote in the sandbox (CSV rows or JSON content). */
async function reportMismatches(
  rep: NonNullable<FlowTestCase['expect']['reports']>[number],
  file: string | undefined,
): Promise<Mismatch[]> {
  if (file === undefined) return [{ path: `reports[${rep.file}]`, expected: 'a report file', actual: undefined, note: 'not written' }];
  const text = await readFile(file, 'utf8');
  const isJson = file.endsWith('.json');
  const content = isJson ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  const rows = isJson ? content?.rows : (parseCsv(text, { columns: true, skip_empty_lines: true }) as unknown[]);
  const ms: Mismatch[] = [];
  if (rep.rows !== undefined) ms.push(...match(rep.rows, rows, `reports[${rep.file}].rows`));
  if (rep.content !== undefined) ms.push(...match(rep.content, content, `reports[${rep.file}]`));
  return ms;
}

/** The case's `event` must be one the flow's trigger matches (else no run would start: said at once). */
function checkCaseEvent(flow: Flow, c: FlowTestCase): FlowNotificationTrigger {
  const t = flow.on.notification;
  if (!t)
    throw new MsgflowError('TEST_CASE_INVALID', {
      reason: `case '${c.name}' gives an event, but flow ${flow.name} has no on.notification trigger`,
    });
  const event = parseNotification(c.event);
  if (!event || !triggerMatches(t, t.instance, event)) {
    throw new MsgflowError('TEST_CASE_INVALID', {
      reason: `case '${c.name}': the event does not match the on.notification trigger of ${flow.name} (no run would start)`,
    });
  }
  return t;
}

/** The message a message event tells of, as the service takes it; a field that does not fit is named. */
function eventMessage(event: NonNullable<FlowTestCase['event']>, what: string): MessageInput {
  const parsed = MessageInputSchema.safeParse(messageInputOf(event));
  if (parsed.success) return messageInputOf(event) as MessageInput;
  const issue = parsed.error.issues[0]!;
  throw new MsgflowError('TEST_CASE_INVALID', {
    reason: `${what}: ${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}`,
  });
}

async function deliverCall(rig: CaseRig, li: LocalInst, event: Record<string, unknown>, what: string): Promise<void> {
  const call = Object.fromEntries(
    ['from', 'status', 'idMessage', 'isVideo'].flatMap((k) => (event[k] === undefined ? [] : [[k, event[k]]])),
  );
  const out = (await admin(rig.service, li, 'call', 'POST', call, what)) as { notified: boolean };
  if (!out.notified) {
    throw new MsgflowError('TEST_CASE_INVALID', {
      reason: `${what}: the local instance does not produce incomingCall notifications (its switch is off)`,
    });
  }
}

/** A contact blocks the account as it would live (admin `block`): incomingBlock when its switch is on. */
async function deliverBlock(rig: CaseRig, li: LocalInst, event: Record<string, unknown>, what: string): Promise<void> {
  const block = event.chatId === undefined ? {} : { chatId: event.chatId };
  const out = (await admin(rig.service, li, 'block', 'POST', block, what)) as { notified: boolean };
  if (!out.notified) {
    throw new MsgflowError('TEST_CASE_INVALID', {
      reason: `${what}: the local instance does not produce incomingBlock notifications (its switch is off, or the contact blocked it already)`,
    });
  }
}

/**
 * Makes the case's event happen on the local service serving the trigger's
 * instance, as it happens live: a message arrives (in the chat's history,
 * lastIncomingMessages, and a notification), the state changes, or (a status,
 * an API message) the notification is queued as given. The consumer then
 * delivers it like any other, and the dispatcher starts the case's run.
 */
async function deliverEvent(rig: CaseRig, c: FlowTestCase, started: Promise<RunHandle>, clock: VirtualClock): Promise<RunHandle> {
  const t = checkCaseEvent(rig.flow, c);
  const event = c.event!;
  const li = rig.service.config.instances.find((l) => l.idInstance === rig.localOf(t.instance))!;
  const what = `case '${c.name}' event`;
  const type = event.typeWebhook;
  if (type === 'incomingMessageReceived' || type === 'outgoingMessageReceived')
    await admin(rig.service, li, 'incoming', 'POST', eventMessage(event, what), what);
  else if (type === 'stateInstanceChanged') await admin(rig.service, li, 'state', 'POST', { state: event.stateInstance }, what);
  // A call rings as it would live: into lastIncomingCalls, and its notification when the switch is on.
  else if (type === 'incomingCall') await deliverCall(rig, li, event, what);
  else if (type === 'incomingBlock') await deliverBlock(rig, li, event, what);
  else if (!((await admin(rig.service, li, 'notification', 'POST', event, what)) as { queued: boolean }).queued)
    throw new MsgflowError('TEST_CASE_INVALID', {
      reason: `${what}: the local instance does not produce ${type} notifications (its switch is off)`,
    });
  let timedOut = false;
  const handle = await Promise.race([started, clock.sleep(parseDuration(c.timeout)!).then(() => void (timedOut = true))]);
  if (timedOut || !handle) {
    throw new MsgflowError('TEST_CASE_INVALID', {
      reason: `${what}, as the local service delivered it, started no run of ${rig.flow.name} within ${c.timeout} of virtual time`,
    });
  }
  return handle;
}

/** The registry of a project, built once per config (plugins are imported once). */
export function registryFor(config: Config): Promise<ActionRegistry> {
  return buildRegistry(config);
}

function formatMs(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return `${ms}ms`;
}

/** The config's local: section with the case's network, population and instance overrides, its data in the case's directory. */
function localConfigFor(config: Config, c: FlowTestCase, caseDir: string): LocalConfig {
  const base = config.local ?? LocalSchema.parse({});
  const network = { ...base.network, ...definedOnly(c.network ?? {}) };
  const accounts = [...network.accounts];
  if (c.population) {
    for (let i = 0; i < c.population.count; i++) {
      if (i % c.population.every === 0)
        accounts.push({ phone: Number(c.population.from + BigInt(i)), hidden: false, replies: [], votes: [], presses: [], writes: [] });
    }
  }
  // A project without local instances still gets one: every config instance maps to it.
  const instances: unknown[] =
    base.instances.length > 0 ? [...base.instances] : [{ idInstance: '1100000001', apiTokenInstance: 'flow-test-token' }];
  for (const name of Object.keys(c.instances ?? {})) {
    if (!config.instances[name])
      throw new MsgflowError('INSTANCE_UNKNOWN', {
        name,
        file: config.file,
        known: ` (instances: ${Object.keys(config.instances).join(', ')}; flow test case 'instances:')`,
      });
  }
  return LocalSchema.parse({
    ...base,
    dataDir: path.join(caseDir, 'service'),
    network: { ...network, accounts },
    instances: instances.map((raw) => {
      const i = raw as Record<string, unknown>;
      // `instance:` for every local instance, then `instances.<name>:` for the one a config instance names.
      const own = Object.entries(c.instances ?? {})
        .filter(([name]) => config.instances[name]?.apiUrl === 'local' && config.instances[name]?.idInstance === String(i.idInstance))
        .map(([, o]) => o);
      return [c.instance ?? {}, ...own].reduce((acc, o) => withOverrides(acc, o, config.baseDir), i);
    }),
  });
}

type Overrides = NonNullable<FlowTestCase['instance']>;

/** A local instance with a case's overrides. */
function withOverrides(i: Record<string, unknown>, o: Overrides, baseDir: string): Record<string, unknown> {
  const { checkAccountLimit, seed, ...over } = o;
  return {
    ...i,
    ...definedOnly(over),
    ...(checkAccountLimit
      ? { checkAccountLimit: { ...(i.checkAccountLimit as object | undefined), ...definedOnly(checkAccountLimit) } }
      : {}),
    ...(seed ? { seed: path.resolve(baseDir, seed) } : {}),
  };
}

/**
 * The local service's media store, as it builds it, with each fetch holding
 * the virtual clock: a download is real I/O the clock must not run past (a
 * send queue waiting on it would otherwise see its deadlines pass). The test's
 * file server (files:, staticDir) is on loopback, so private addresses are
 * allowed when it runs.
 */
function heldMediaStore(local: LocalConfig, clock: VirtualClock, servesFiles: boolean): MediaStore {
  const store = createMediaStore({
    dir: path.join(local.dataDir, 'files'),
    clock,
    maxBytes: local.maxFileBytes,
    timeoutMs: local.fetchTimeoutMs,
    maxRedirects: local.maxRedirects,
    retentionMs: local.fileRetentionMs,
    allowPrivate: servesFiles || local.fetch.allowPrivate,
  });
  return {
    ...store,
    fetchAndStore: async (input) => {
      const release = clock.hold();
      try {
        return await store.fetchAndStore(input);
      } finally {
        release();
      }
    },
    open: (id) => store.open(id),
    purgeExpired: () => store.purgeExpired(),
    close: () => store.close(),
  };
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * A case's inputs: strings as `--input` takes them, rows given inline or as a
 * `sequence`. Rows for a streamed input (`stream: true`, whose value is a
 * file's path) are written to a JSON Lines file in the case's directory, so
 * the job reads them the way it reads the project's file.
 */
async function caseInputs(
  flow: Flow,
  c: FlowTestCase,
  dirs: { testDir: string; caseDir: string },
  overrides: Record<string, string>,
): Promise<Record<string, unknown>> {
  const { testDir, caseDir } = dirs;
  const strings: Record<string, string> = { ...overrides };
  const direct: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(c.inputs ?? {})) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      // A file input's override is a path: relative to the test file, as a user would read it.
      strings[name] = flow.inputs[name]?.file !== undefined ? path.resolve(testDir, String(v)) : String(v);
    } else if (Array.isArray(v)) direct[name] = v;
    else {
      const { column, from, count } = v.sequence;
      direct[name] = Array.from({ length: count }, (_, i) => ({ [column]: String(from + BigInt(i)) }));
    }
  }
  for (const [name, rows] of Object.entries(direct)) {
    if (!flow.inputs[name]?.stream) continue;
    const file = path.join(caseDir, 'inputs', `${name}.jsonl`);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, (rows as unknown[]).map((r) => `${JSON.stringify(r)}\n`).join(''));
    direct[name] = file;
  }
  // Inputs given as rows replace the file the flow declares: resolve the rest only.
  const rest: Flow = { ...flow, inputs: Object.fromEntries(Object.entries(flow.inputs).filter(([k]) => !(k in direct))) };
  return { ...(await resolveInputs(rest, strings)), ...direct };
}

type LocalInst = LocalConfig['instances'][number];

/** An admin call of the local service; `what` names the input in the error of an answer that is not 200. */
async function admin(
  service: LocalService,
  inst: LocalInst,
  action: string,
  httpMethod: 'GET' | 'POST',
  body?: unknown,
  what = `local service ${action}`,
): Promise<unknown> {
  const res = await service.handle({
    httpMethod,
    path: `/_local/waInstance${inst.idInstance}/${action}/${encodeURIComponent(inst.apiTokenInstance)}`,
    query: {},
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status !== 200) {
    const answer = res.body as { message?: unknown } | undefined;
    const why = typeof answer?.message === 'string' ? answer.message : JSON.stringify(res.body);
    throw new MsgflowError('TEST_CASE_INVALID', { reason: `${what}: ${why} (HTTP ${res.status})` });
  }
  return res.body;
}

async function api(
  service: LocalService,
  inst: LocalInst,
  method: string,
  query: Record<string, string | number>,
  body?: unknown,
): Promise<unknown> {
  const res = await service.handle({
    httpMethod: body === undefined ? 'GET' : 'POST',
    path: `/waInstance${inst.idInstance}/${method}/${encodeURIComponent(inst.apiTokenInstance)}`,
    query: Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])),
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.body;
}

/**
 * The in-process transport of a case: each request holds the virtual clock
 * until it is answered (the service's work is invisible to the clock), and a
 * urlFile the test serves is rewritten to its file server.
 */
function heldTransport(base: Transport, clock: VirtualClock, rewrite?: (body: unknown) => unknown): Transport {
  return {
    description: base.description,
    async request(req) {
      // The call's work inside the local service is invisible to the clock: hold time still until it answers.
      const release = clock.hold();
      try {
        return await base.request(rewrite && req.body !== undefined ? { ...req, body: rewrite(req.body) } : req);
      } finally {
        release();
      }
    },
  };
}

/**
 * Serves the case's `files:` and the config's local.staticDir (what
 * `${{ local.url }}/_local/static/...` names) on a real HTTP port (port 0),
 * and rewrites urlFile values to it: the local service fetches them for real.
 */
async function serveFiles(
  files: NonNullable<FlowTestCase['files']>,
  testDir: string,
  localUrl: string,
  staticDir: string | undefined,
): Promise<{ server: Server; rewrite: (body: unknown) => unknown }> {
  const entries = Object.entries(files);
  const staticPrefix = `${localUrl}/_local/static/`;
  const server = createServer((req, res) => {
    // No keep-alive: an idle kept-alive socket looks like a request in flight to the virtual clock.
    res.setHeader('connection', 'close');
    const [, kind, rest] = (req.url ?? '').split('/', 3);
    let file: string | undefined;
    if (kind === 'static' && staticDir && rest) {
      const rel = decodeURIComponent((req.url ?? '').slice('/static/'.length));
      const abs = path.resolve(staticDir, rel);
      if (abs.startsWith(staticDir + path.sep)) file = abs;
    } else if (kind === 'files') {
      const spec = entries[Number(rest)]?.[1];
      if (spec !== undefined && typeof spec !== 'string') return void res.writeHead(spec.status).end();
      if (typeof spec === 'string') file = path.resolve(testDir, spec);
    }
    if (!file) return void res.writeHead(404).end();
    createReadStream(file)
      .on('error', () => res.writeHead(404).end())
      .pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const rewrite = (body: unknown): unknown => {
    if (typeof body !== 'object' || body === null || typeof (body as { urlFile?: unknown }).urlFile !== 'string') return body;
    const b = body as { urlFile: string; fileName?: string };
    const i = entries.findIndex(([url]) => url === b.urlFile);
    if (i >= 0) {
      const spec = entries[i]![1];
      const name = path.basename(typeof spec === 'string' ? spec : b.fileName || 'file');
      return { ...b, urlFile: `http://127.0.0.1:${port}/files/${i}/${encodeURIComponent(name)}` };
    }
    if (staticDir && b.urlFile.startsWith(staticPrefix))
      return { ...b, urlFile: `http://127.0.0.1:${port}/static/${b.urlFile.slice(staticPrefix.length)}` };
    return body;
  };
  return { server, rewrite };
}
