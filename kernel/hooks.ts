import { HOOK_NAMES, type HookName } from '../sdk/plugin/hooks.ts';

/** The kernel's import point for the hook names, which the plugin SDK declares (sdk/plugin/hooks.ts). */
export { HOOK_NAMES, type HookName };

const known = new Set<string>(HOOK_NAMES);
export function isHookName(name: string): name is HookName {
  return known.has(name);
}

/** Phases that run in order in the request chain (onResponse and onError are called separately). */
export const CHAIN_PHASES = HOOK_NAMES.filter((h) => h !== 'onResponse' && h !== 'onError') as Exclude<
  HookName,
  'onResponse' | 'onError'
>[];
