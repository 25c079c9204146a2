import { z } from 'zod';
import { SvcError, type CliCommand, type CliEnv, type ControlOp } from '../../sdk/plugin/index.ts';
import { scopedRef, tenantOf } from '../../sdk/plugin/tenants.ts';
import { ZoneTime } from './calendar.ts';
import { RedisCounterStore } from './policies/redis.ts';
import type { RateLimitState } from './state.ts';
import { compileRuleSet, ownerKey, WindowPool, type OwnerKind } from './rules.ts';
import { optionsOf, type Rule } from './schema.ts';

/**
 * `svc limits clear`: resets counters in the running server (its memory, and the Redis of the
 * redis policy), and through a store notification those of every other node on the same database.
 */

export const clearArgsSchema = z
  .object({
    kind: z.enum(['security', 'channel']).describe('Level of the owner.'),
    name: scopedRef(z.string().min(1)).describe("Security definition or channel name (a tenant's administrator writes its own short)."),
    rule: z.number().int().min(1).optional().describe('1-based rule position; all rules when absent.'),
  })
  .strict();

export type ClearArgs = z.infer<typeof clearArgsSchema>;

/**
 * Both the rate/burst and the cap counters sit under one key, so one prefix drop resets both at
 * once. Both stores are cleared whatever the set's policy now is: counters a policy change left
 * behind in the other store would come back with the next change.
 */
export async function clearCounters(state: RateLimitState, args: ClearArgs): Promise<{ cleared: number }> {
  const sets = args.kind === 'security' ? state.securities : state.channels;
  const set = sets.get(args.name);
  let prefix = ownerKey(args.kind, args.name);
  if (args.rule !== undefined) {
    const rule = set?.rules[args.rule - 1];
    if (rule === undefined) {
      throw new Error(`${args.kind} '${args.name}' has ${set?.rules.length ?? 0} rate limiting rule(s); there is no rule ${args.rule}`);
    }
    prefix = rule.key;
  }
  const local = await state.store.clear(prefix);
  const shared = state.redis === undefined ? 0 : await state.redis.clear(prefix);
  return { cleared: local + shared };
}

/** Notification of a clear (payload: its arguments as JSON): every node resets its own counters. */
const CLEARED = 'limits.clear';

export function clearControl(state: RateLimitState): ControlOp<ClearArgs> {
  return {
    op: 'limits.clear',
    tenantScoped: true,
    args: clearArgsSchema,
    handler: async (args, caller) => {
      // A tenant's administrators (admin API) clear their tenant's counters only.
      if (caller !== undefined && tenantOf(args.name) !== caller.tenant) throw new SvcError('NOT_FOUND', `No ${args.kind} named '${args.name}'`);
      const result = await clearCounters(state, args);
      await state.kernel.store.notify(CLEARED, JSON.stringify(args));
      return result;
    },
  };
}

/** Clears here what `limits clear` cleared on another node. The count there is what the CLI reports. */
export function followClears(state: RateLimitState): () => void {
  return state.kernel.store.listen(CLEARED, async (payload) => {
    const args = clearArgsSchema.safeParse(JSON.parse(payload));
    if (!args.success) return;
    const { cleared } = await clearCounters(state, args.data);
    state.kernel.log.info({ ...args.data, cleared }, 'rate limit counters cleared on another node: cleared here too');
  });
}

const USAGE = 'svc limits clear (--security NAME | --channel NAME) [--rule N]';

/** Parses `--security NAME | --channel NAME [--rule N]` (also `--flag=value`); a string is a usage error. */
export function parseClearArgs(argv: readonly string[]): ClearArgs | string {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (flag !== '--security' && flag !== '--channel' && flag !== '--rule') return `unknown argument '${arg}'`;
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '') return `${flag} needs a value`;
    if (values.has(flag)) return `${flag} given twice`;
    values.set(flag, value);
  }
  const security = values.get('--security');
  const channel = values.get('--channel');
  if ((security === undefined) === (channel === undefined)) return 'name exactly one of --security or --channel';
  const kind: OwnerKind = security !== undefined ? 'security' : 'channel';
  const ruleText = values.get('--rule');
  if (ruleText !== undefined && !/^[1-9]\d*$/.test(ruleText)) return '--rule must be a rule position: 1, 2, ...';
  return { kind, name: (security ?? channel)!, rule: ruleText === undefined ? undefined : Number(ruleText) };
}

export const clearCommand: CliCommand = {
  words: ['limits', 'clear'],
  usage: USAGE,
  describe: 'Reset the rate/burst and cap counters of a security definition or channel (all its rules, or rule N) in the running server.',
  async run(argv, env) {
    const args = parseClearArgs(argv);
    if (typeof args === 'string') {
      env.err(`${args}\nusage: ${USAGE}`);
      return 2;
    }
    const owners = args.kind === 'security' ? env.config.security : env.config.channel_rest;
    if (!owners.some((o) => o.name === args.name)) {
      env.err(`no ${args.kind === 'security' ? 'security definition' : 'channel'} named '${args.name}' in ${env.configPath}`);
      return 2;
    }
    const answer = await env.control('limits.clear', args);
    if (answer === undefined) return clearWithoutServer(args, owners.find((o) => o.name === args.name)!, env);
    if (!answer.ok) {
      env.err(answer.error ?? 'the server refused to clear the counters');
      return 1;
    }
    const { cleared } = answer.value as { cleared: number };
    const what = args.rule === undefined ? 'all rules' : `rule ${args.rule}`;
    env.out(`cleared ${cleared} counter(s) of ${args.kind} '${args.name}' (${what})`);
    return 0;
  },
};

/**
 * No server runs here: the local counters went with it, but those of the redis policy live on
 * in Redis (other nodes may be counting in them), so they are cleared there directly.
 */
async function clearWithoutServer(args: ClearArgs, owner: object, env: CliEnv): Promise<number> {
  const options = optionsOf(env.config);
  if (options?.redis === undefined) {
    env.err('no running server: counters live in its memory only, so there is nothing to clear');
    return 1;
  }
  let prefix = ownerKey(args.kind, args.name);
  if (args.rule !== undefined) {
    const rules = ((owner as { rate_limiting?: Rule[] }).rate_limiting ?? []);
    if (rules.length < args.rule) {
      env.err(`${args.kind} '${args.name}' has ${rules.length} rate limiting rule(s); there is no rule ${args.rule}`);
      return 1;
    }
    // Rule keys do not depend on the zone: any pool compiles the same keys.
    prefix = compileRuleSet(args.kind, args.name, rules, new WindowPool(new ZoneTime('UTC'))).rules[args.rule - 1]!.key;
  }
  const store = new RedisCounterStore({
    url: options.redis,
    keyPrefix: options.redis_key_prefix,
    connectTimeoutMs: options.redis_connect_timeout_ms,
    timeoutMs: options.redis_timeout_ms,
    onError: options.on_redis_error,
    log: { warn: () => undefined, info: () => undefined },
  });
  try {
    await store.connect();
    if (!store.ready) {
      env.err('no running server, and Redis (plugins.rate-limit.config.redis) is unreachable: nothing cleared');
      return 1;
    }
    const cleared = await store.clear(prefix);
    const what = args.rule === undefined ? 'all rules' : `rule ${args.rule}`;
    env.out(`no running server: cleared ${cleared} Redis counter(s) of ${args.kind} '${args.name}' (${what}); local counters went with the server`);
    return 0;
  } finally {
    await store.close();
  }
}
