import { controlOrStore, usage, type CliCommand, type CliEnv } from '../../../sdk/plugin/index.ts';
import { listArgs, listEvents, replayArgs, selectorArgs, showEvent, type EventSummary } from './control.ts';
import { QueueTable } from './store.ts';

/**
 * `svc queue list|show|replay|delete`: clients of the running server's control ops. With no
 * server running, list and show read the store; replay and delete need the server (it holds the
 * schedule, and an edit behind its back would be overwritten by attempts it runs).
 */

const BACKGROUND = '(background)';

interface Flags {
  positional: string[];
  values: Map<string, string>;
  switches: Set<string>;
}

function readFlags(args: string[], valued: readonly string[]): Flags | string {
  const flags: Flags = { positional: [], values: new Map(), switches: new Set() };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('--')) flags.positional.push(a);
    else if (valued.includes(a)) {
      const v = args[++i];
      if (v === undefined) return `${a} needs a value`;
      flags.values.set(a, v);
    } else flags.switches.add(a);
  }
  return flags;
}

/** --channel NAME, or --background; neither: every queue. */
function channelOf(flags: Flags): string | null | undefined {
  if (flags.switches.has('--background')) return null;
  return flags.values.get('--channel');
}

function line(e: EventSummary): string {
  // A service's exception is stored as `Error: its message`: its kind is said once.
  const error = e.lastError && (e.lastError.message.startsWith(`${e.lastError.kind}: `) ? e.lastError.message : `${e.lastError.kind}: ${e.lastError.message}`);
  const last = error ? `  last error: ${error.replace(/\s+/g, ' ').slice(0, 120)}` : '';
  const next = e.state === 'pending' && e.nextAttemptAt ? ` next ${e.nextAttemptAt}` : '';
  return `#${e.id}  ${e.channel ?? BACKGROUND}  ${e.service}  ${e.state}  attempts ${e.attempts}  received ${e.firstReceivedAt}${next}  cid ${e.cid}${last}`;
}

/** Runs an op on the running server, or (read-only ops) on the store when none runs. */
function run(env: CliEnv, op: string, args: unknown, offline?: (table: QueueTable) => Promise<unknown>): Promise<{ value: unknown } | number> {
  return controlOrStore(env, op, args, offline && (async (store) => offline(await QueueTable.open(store))), 'no server is running: replay and delete act through the running server (start it with `svc start`)');
}

const LIST_USAGE = 'queue list [--channel NAME | --background] [--service NAME] [--state pending|running|dead] [--limit N] [--json]';
const listCommand: CliCommand = {
  words: ['queue', 'list'],
  usage: LIST_USAGE,
  describe: 'Lists queued events (pending, running, dead-lettered) of one channel, the background work, or every queue, oldest first.',
  async run(argv, env) {
    const flags = readFlags(argv, ['--channel', '--state', '--limit', '--service']);
    if (typeof flags === 'string') return usage(env, LIST_USAGE, flags);
    const limit = flags.values.get('--limit');
    const parsed = listArgs.safeParse({ channel: channelOf(flags), service: flags.values.get('--service'), state: flags.values.get('--state'), limit: limit === undefined ? undefined : Number(limit) });
    if (!parsed.success || flags.positional.length) return usage(env, LIST_USAGE, parsed.error?.issues[0]?.message ?? 'unexpected arguments');
    const out = await run(env, 'queue.list', parsed.data, (table) => listEvents(table, parsed.data));
    if (typeof out === 'number') return out;
    const events = out.value as EventSummary[];
    if (flags.switches.has('--json')) env.out(JSON.stringify(events, null, 2));
    else if (!events.length) env.out('no events');
    else for (const e of events) env.out(line(e));
    return 0;
  },
};

const SHOW_USAGE = 'queue show ID';
const showCommand: CliCommand = {
  words: ['queue', 'show'],
  usage: SHOW_USAGE,
  describe: 'Prints one queued event as JSON: its state, the request it runs with, and the error of every failed attempt with its CID.',
  async run(argv, env) {
    const id = Number(argv[0]);
    if (argv.length !== 1 || !Number.isInteger(id) || id < 1) return usage(env, SHOW_USAGE, 'the event id, and nothing else');
    const out = await run(env, 'queue.show', { id }, (table) => showEvent(table, id));
    if (typeof out === 'number') return out;
    env.out(JSON.stringify(out.value, null, 2));
    return 0;
  },
};

function selectorCommand(verb: 'replay' | 'delete', describe: string): CliCommand {
  const replay = verb === 'replay';
  const USAGE = `queue ${verb} (ID | --all | --error TEXT) [--channel NAME | --background] [--service NAME] [--state pending|dead]${replay ? ' [--version N]' : ''}`;
  return {
    words: ['queue', verb],
    usage: USAGE,
    describe,
    async run(argv, env) {
      const flags = readFlags(argv, ['--channel', '--state', '--error', '--service', ...(replay ? ['--version'] : [])]);
      if (typeof flags === 'string') return usage(env, USAGE, flags);
      const id = flags.positional.length ? Number(flags.positional[0]) : undefined;
      if (flags.positional.length > 1 || (id !== undefined && (!Number.isInteger(id) || id < 1))) return usage(env, USAGE, 'one event id at most');
      const version = flags.values.get('--version');
      const parsed = (replay ? replayArgs : selectorArgs).safeParse({
        id,
        all: flags.switches.has('--all') ? true : undefined,
        error: flags.values.get('--error'),
        channel: channelOf(flags),
        service: flags.values.get('--service'),
        state: flags.values.get('--state'),
        ...(version === undefined ? {} : { version: Number(version) }),
      });
      if (!parsed.success) return usage(env, USAGE, parsed.error.issues[0]?.message ?? 'invalid arguments');
      const out = await run(env, `queue.${verb}`, parsed.data);
      if (typeof out === 'number') return out;
      const { ids, refused = [] } = out.value as { ids: number[]; refused?: Array<{ id: number; reason: string }> };
      const against = version === undefined ? '' : ` against version ${version}`;
      if (ids.length || !refused.length) env.out(ids.length ? `${replay ? 'replayed' : 'deleted'} ${ids.length} event(s)${against}: ${ids.map((i) => `#${i}`).join(' ')}` : 'no event matched (running events are left alone)');
      for (const r of refused) env.out(`not replayed #${r.id}: ${r.reason}`);
      return 0;
    },
  };
}

export const queueCommands: CliCommand[] = [
  listCommand,
  showCommand,
  selectorCommand(
    'replay',
    "Runs pending or dead-lettered events again now, attempts counted afresh (their error history is kept): one by id, all, or those whose last error contains TEXT; --service: one service's; --version N: only while version N of their service (`svc service history`) serves.",
  ),
  selectorCommand('delete', "Deletes pending or dead-lettered events for good: one by id, all, or those whose last error contains TEXT; --service: one service's."),
];
