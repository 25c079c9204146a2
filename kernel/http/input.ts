import type { Channel } from '../config/schema.ts';
import type { HookFn } from '../plugin.ts';
import { SvcError } from '../errors.ts';
import type { ServiceRegistry } from '../services/registry.ts';

/** The kernel's own step before plugin `validate` hooks: the service's input, merged and checked. */

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

/** Spec A.3–A.5, A.11: verb handlers, parameter precedence, the typed input model. */
export function prepareInput(channel: Channel, registry: ServiceRegistry, textPayload: boolean): HookFn {
  const qsOverPath = channel.url_params_pri === 'qs_over_path';
  const urlOverMsg = channel.params_pri === 'url_over_msg';
  return function mergeAndCheckInput(ex) {
    const svc = registry.get(channel.service);
    if (!svc) throw new SvcError('SERVICE_NOT_DEPLOYED', `Service '${channel.service}' is not deployed`);
    if (svc.meta.verbs.length && !svc.meta.verbs.includes(ex.method)) {
      throw new SvcError('METHOD_NOT_ALLOWED', undefined, { headers: { allow: svc.allow } });
    }
    const url = qsOverPath ? { ...ex.pathParams, ...ex.query } : { ...ex.query, ...ex.pathParams };
    const payload = ex.payload;
    const fields = payload && typeof payload === 'object' && !Array.isArray(payload) && !Buffer.isBuffer(payload) ? (payload as Record<string, unknown>) : undefined;
    let input: Record<string, unknown>;
    if (!fields) input = url;
    else if (isEmpty(url) && !svc.checkInput) {
      // Nothing to merge and nothing to change: the payload's fields are the input, uncopied.
      input = fields;
    } else input = urlOverMsg ? { ...fields, ...url } : { ...url, ...fields };
    ex.input = input;
    if (!svc.checkInput) return;
    // Values that arrived as text (URL, and text formats' payloads) are converted to a model's types.
    const textKeys = new Set<string>();
    if (!fields || urlOverMsg) for (const k in url) textKeys.add(k);
    else for (const k in url) if (!(k in fields)) textKeys.add(k);
    if (fields && textPayload) for (const k in fields) textKeys.add(k);
    const problem = svc.checkInput(input, textKeys);
    if (problem) throw new SvcError('INVALID_INPUT', `Invalid input: ${problem}`);
  };
}
