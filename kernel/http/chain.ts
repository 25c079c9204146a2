import type { Channel, SvcConfig } from '../config/schema.ts';
import { CHAIN_PHASES, type HookName } from '../hooks.ts';
import type { ErrorHookFn, HookFn, KernelApi, Plugin } from '../plugin.ts';
import { errorBody, SvcError } from '../errors.ts';
import type { ServiceRegistry } from '../services/registry.ts';
import type { InvokeRequest, InvokeResult } from '../sandbox/protocol.ts';
import { sendDraft, type HttpExchange } from './exchange.ts';
import { prepareInput } from './input.ts';
import { invokeService } from './invoke.ts';
import type { StepWatch } from '../platform/step-watch.ts';

export interface ActivePlugin {
  plugin: Plugin;
  state: unknown;
}

/** A channel ready to serve: its steps in order, built once per config. */
export interface ChannelRuntime {
  channel: Channel;
  steps: HookFn[];
  onError: ErrorHookFn[];
  onResponse: HookFn[];
  /** Index in `steps` of the service call, which answers within its own limit (-1: none). */
  serviceStep: number;
}

/** Requests whose chain steps are bounded in time (server.step_timeout_ms). */
export type ChainWatch = StepWatch<HttpExchange, ChannelRuntime>;

/** How many plugin steps a channel's chain has in each phase. */
export type ChainShape = Readonly<Record<(typeof CHAIN_PHASES)[number], number>>;

/** The kernel's own steps in a chain: the service call for a channel, the handler for a plugin route. */
export interface OwnSteps {
  /** Runs first in the validate phase (input merging and the service's model). */
  validate?: HookFn;
  /** Runs last in the invoke phase, after plugins' invoke hooks (one that replies replaces it); built knowing the plugins' steps. */
  invoke: (shape: ChainShape) => HookFn;
  /** The invoke step is the service call, bounded by the service's own time limit (not a plugin route's handler). */
  invokeHasOwnLimit?: boolean;
  /** Runs before plugins' onError hooks. */
  onError?: ErrorHookFn;
}

/** Builds a chain: per phase, plugin hooks that apply to this channel and the kernel's own steps. */
export function buildChain(channel: Channel, config: SvcConfig, plugins: readonly ActivePlugin[], kernel: KernelApi, own: OwnSteps): ChannelRuntime {
  const tapped = (phase: HookName): Array<HookFn | ErrorHookFn> => {
    const out: Array<HookFn | ErrorHookFn> = [];
    for (const { plugin, state } of plugins) {
      const factory = plugin.hooks[phase];
      const fn = factory?.({ channel, config, state, kernel });
      if (fn) out.push(fn);
    }
    return out;
  };
  const byPhase = CHAIN_PHASES.map((phase) => tapped(phase) as HookFn[]);
  const shape = Object.fromEntries(CHAIN_PHASES.map((phase, i) => [phase, byPhase[i]!.length])) as ChainShape;
  const chain: HookFn[] = [];
  let serviceStep = -1;
  CHAIN_PHASES.forEach((phase, i) => {
    if (phase === 'validate' && own.validate) chain.push(own.validate);
    chain.push(...byPhase[i]!);
    if (phase === 'invoke') {
      if (own.invokeHasOwnLimit) serviceStep = chain.length;
      chain.push(own.invoke(shape));
    }
  });
  const onError = tapped('onError') as ErrorHookFn[];
  if (own.onError) onError.unshift(own.onError);
  return { channel, steps: chain, onError, onResponse: tapped('onResponse') as HookFn[], serviceStep };
}

/** A channel's own steps: input merged and checked against the service's model, then the service called. */
export function serviceSteps(channel: Channel, plugins: readonly ActivePlugin[], registry: ServiceRegistry, invoke: (req: InvokeRequest) => Promise<InvokeResult>): OwnSteps {
  const textFormat = plugins.some(({ plugin }) => plugin.contributes?.textFormats?.includes(channel.data_format));
  const jsonBody = plugins.some(({ plugin }) => plugin.contributes?.jsonBodyFormats?.includes(channel.data_format));
  // The payload is still the JSON format's parse of the body when that is the only parse step
  // and no plugin step follows it (the kernel's input step only reads it).
  const bodyJson = (shape: ChainShape) => jsonBody && shape.parse === 1 && shape.validate === 0 && shape.invoke === 0;
  // The service's value may come back as JSON text when the JSON format's serializer is the only step that would read it.
  const jsonReply = plugins.some(({ plugin }) => plugin.contributes?.jsonReplyFormats?.includes(channel.data_format));
  const replyJson = (shape: ChainShape) => jsonReply && shape.serialize === 1;
  return { validate: prepareInput(channel, registry, textFormat), invoke: (shape) => invokeService(channel, invoke, bodyJson(shape), replyJson(shape)), invokeHasOwnLimit: true };
}

/**
 * Runs a chain; awaits only steps that returned a promise, and stops once a reply went out.
 * With a watch, a request whose awaited step (other than the service call) runs past the step
 * limit is answered by the watch (expireStep); the step may settle later and finds it answered.
 */
export async function runChain(rt: ChannelRuntime, ex: HttpExchange, watch?: ChainWatch): Promise<void> {
  let watched = false;
  try {
    const steps = rt.steps;
    for (let i = 0; i < steps.length; i++) {
      const pending = steps[i]!(ex);
      if (pending) {
        if (watch) {
          ex.stepUntil = i === rt.serviceStep ? Infinity : watch.deadline();
          if (!watched) watch.watch(ex, rt);
          watched = true;
        }
        await pending;
      }
      if (ex.replied) return;
    }
    sendDraft(ex);
  } catch (err) {
    await replyWithError(rt.onError, ex, err);
  } finally {
    if (watched) watch!.unwatch(ex);
  }
}

/**
 * What a watch does with a request whose step overran: 503 STEP_TIMEOUT, logged with its
 * channel. A request whose body is still arriving is left to server.request_timeout_ms (false: its
 * step gets the whole limit again), so a slow upload is a 408, not this.
 */
export function expireStep(ex: HttpExchange, rt: ChannelRuntime): boolean {
  if (ex.replied) return true;
  if (!ex.request.raw.complete) return false;
  ex.log.warn({ channel: rt.channel.name }, 'a request step did not finish within server.step_timeout_ms; the request was answered 503');
  void replyWithError(rt.onError, ex, new SvcError('STEP_TIMEOUT'));
  return true;
}

export async function replyWithError(hooks: readonly ErrorHookFn[], ex: HttpExchange, err: unknown): Promise<void> {
  if (ex.replied) return;
  const e = err instanceof SvcError ? err : undefined;
  // Refused at once, as a 429 is: paused as one (server.refusal_pause_ms), whichever hook shapes the answer.
  if (e?.code === 'SERVICE_QUARANTINED') ex.refusal = true;
  // Allow, WWW-Authenticate, Retry-After belong to the error, whichever hook shapes its body.
  if (e?.headers && hooks.length) Object.assign(ex.response.headers, e.headers);
  for (const hook of hooks) {
    try {
      await hook(ex, err);
    } catch (hookErr) {
      ex.log.error({ err: hookErr }, 'onError hook failed');
    }
    if (ex.replied) return;
  }
  if (!e) ex.log.error({ err }, 'request failed');
  // A quarantine was logged once, when it began: a client that keeps calling would otherwise write a warning per call.
  else if (e.status >= 500 && !ex.refusal) ex.log.warn({ code: e.code, details: e.details }, 'request failed');
  const status = e?.status ?? 500;
  const headers = e?.headers ? { ...ex.response.headers, ...e.headers } : ex.response.headers;
  ex.response.contentType = 'application/json; charset=utf-8';
  ex.response.headers = {};
  // Headers a service set were checked when its call returned (checkedHeaders).
  ex.reply(status, errorBody(ex.cid, e?.details ?? 'Internal server error'), headers);
}
