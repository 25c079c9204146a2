import type { SecurityEntry } from '../../../sdk/plugin/index.ts';
import type { OutgoingAuthFactory } from '../../capabilities.ts';

/**
 * Outgoing credentials that are one fixed header (Basic Auth, API key). The secret must be in
 * config (`${ENV_NAME}` recommended): a value set with `svc secdef` is stored only as a hash,
 * which can verify callers but cannot be sent.
 */
export function headerCredential(field: string, header: string, value: (definition: SecurityEntry, secret: string) => string): OutgoingAuthFactory {
  return (definition) => {
    const secret = definition[field];
    if (typeof secret !== 'string' || secret === '') {
      throw new Error(`${definition.type} definition '${definition.name}' has no ${field} in config; an outgoing connection sends it, so it must be set there (e.g. ${field}: \${ENV_NAME})`);
    }
    const headerValue = value(definition, secret);
    return {
      authorize(request) {
        request.headers[header] = headerValue;
      },
    };
  };
}
