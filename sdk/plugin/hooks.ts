/**
 * The closed list of request lifecycle phases. A plugin may tap only these;
 * one that names anything else is refused at load (kernel/plugin-loader.ts).
 * Order here is execution order.
 */
export const HOOK_NAMES = [
  'onRequest',    // earliest: every matched request, before credentials are read
  'authenticate', // security plugins: set exchange.auth or reply 401
  'limit',        // rate limiting and firewall: reply 429 or drop the connection
  'parse',        // data formats: read the body, set exchange.payload
  'validate',     // extra checks after the kernel merged input and applied the service's model
  'invoke',       // runs before the kernel's own invoke; a plugin that replies here replaces it (Use queue)
  'serialize',    // data formats: turn exchange.response.body into bytes
  'onResponse',   // after the response was sent: logging, metrics (errors are ignored)
  'onError',      // a step threw: a plugin may shape the error reply before the kernel's default
] as const;

export type HookName = (typeof HOOK_NAMES)[number];
