import type { OpenApiFragment, Plugin } from '../sdk/plugin/contract.ts';

// The contract lives in the plugin SDK; the kernel's modules read it from here.
export * from '../sdk/plugin/contract.ts';

/** Fields redacted in every log line whatever plugins are enabled; plugins add their credential headers. */
const ALWAYS_REDACTED = ['*.password', '*.secret', '*.key', '*.token'];

/** The pino redact paths of the kernel and the given plugins. */
export function logRedactPaths(plugins: readonly Plugin[]): string[] {
  return [...new Set([...ALWAYS_REDACTED, ...plugins.flatMap((p) => p.contributes?.logRedact ?? [])])];
}

/** The OpenAPI parts the given plugins contribute, in plugin order. */
export function openApiFragments(plugins: readonly Plugin[]): OpenApiFragment[] {
  const out: OpenApiFragment[] = [];
  for (const p of plugins) {
    const fragment = p.contributes?.openapi?.();
    if (fragment) out.push(fragment);
  }
  return out;
}
