import { z } from 'zod';
import { hostPath, listColumn, scopedRef } from '../../../sdk/plugin/index.ts';
import type { ConfigIssue, SvcConfig } from '../../../sdk/plugin/index.ts';
import { OUTGOING_AUTH_CAPABILITY } from '../../capabilities.ts';

/** Header names a connection or a call may not set: the HTTP client owns framing and the host. */
export const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection', 'expect']);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

export const headerMapSchema = z
  .record(z.string(), z.string().regex(FIELD_VALUE, 'holds control characters'))
  .superRefine((headers, ctx) => {
    for (const name of Object.keys(headers)) {
      if (!TOKEN.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'not a header name' });
      else if (RESERVED_HEADERS.has(name.toLowerCase())) ctx.addIssue({ code: 'custom', path: [name], message: 'is set by the HTTP client' });
    }
  })
  .describe('Headers added to every request; a call may add or override its own.');

export const retrySchema = z
  .object({
    max_attempts: z.number().int().min(1).max(20).default(3).describe('Attempts in all, the first included; 1 turns retries off.'),
    base_backoff_ms: z.number().int().min(0).max(60_000).default(200).describe('Backoff before the first retry; doubles per retry (full jitter: a random wait up to it).'),
    max_backoff_ms: z.number().int().min(0).max(300_000).default(5_000).describe('Ceiling of one backoff.'),
    budget_ms: z.number().int().min(1).max(3_600_000).default(30_000).describe('Total time for all attempts and waits; a Retry-After past it ends the retries.'),
  })
  .strict();

export const tlsSchema = z
  .object({
    reject_unauthorized: z.boolean().default(true).describe('Refuse servers whose certificate does not verify; false only for test systems.'),
    ca_file: hostPath(z.string().min(1)).optional().describe('PEM file of extra certificate authorities to trust.'),
    server_name: z.string().min(1).optional().describe('Name to verify the certificate against, when it differs from the address host.'),
  })
  .strict();

const addressSchema = z
  .string()
  .refine((a) => {
    try {
      const u = new URL(a);
      return (u.protocol === 'http:' || u.protocol === 'https:') && !u.search && !u.hash && !u.username && !u.password;
    } catch {
      return false;
    }
  }, 'must be an http:// or https:// address without query, fragment or credentials');

export const outgoingEntrySchema = z
  .object({
    name: z.string().min(1).describe('Unique; service code refers to the connection by this exact name.'),
    address: listColumn(addressSchema, 1, 'Address').describe('Base address of the external system, e.g. https://crm.example.com (a path prefix is allowed).'),
    url_path: z
      .string()
      .startsWith('/', 'must start with /')
      .refine((p) => !p.includes('?') && !p.includes('#'), 'must not contain a query string or fragment')
      .default('/')
      .describe('Path after the address; may hold {placeholder} parameters filled from the call\'s params.'),
    security: listColumn(scopedRef(z.string().min(1), { to: ['security'] }), 2, 'Security').optional().describe('Security definition whose credentials are added on the host side: basic_auth, apikey, bearer_token or ntlm.'),
    timeout_ms: z.number().int().min(1).max(600_000).default(10_000).describe('Limit of one attempt, from sending to the last response byte.'),
    retry: retrySchema.default(retrySchema.parse({})).describe('Retries of timeouts, connection errors and 429 responses.'),
    headers: headerMapSchema.optional(),
    tls: tlsSchema.optional().describe('TLS settings of an https address.'),
    max_connections: z.number().int().min(1).max(1024).default(16).describe('Most sockets kept open to the address (keep-alive).'),
    keep_alive_ms: z
      .number()
      .int()
      .min(1)
      .max(600_000)
      .default(4_000)
      .describe('Longest a socket with nothing to do is kept for the next call; a server\'s Keep-Alive: timeout shortens it. Keep it below the idle timeout of the server and of proxies on the way: a call sent as they close the socket fails, and a POST is not sent again.'),
    max_response_bytes: z.number().int().min(1024).max(256 * 1024 * 1024).default(16 * 1024 * 1024).describe('Largest response body a call accepts; larger is a failed call.'),
    allowed_services: z.array(scopedRef(z.string().min(1))).optional().describe('Services that may use the connection; every service when absent.'),
  })
  .strict();

export type OutgoingEntry = z.infer<typeof outgoingEntrySchema>;
export type RetryPolicy = z.infer<typeof retrySchema>;

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    outgoing_rest: OutgoingEntry[];
  }
}

export const outgoingSectionSchema = z.array(outgoingEntrySchema).default([]).describe('Outgoing REST connections services call by name.').meta({ title: 'Outgoing REST connections' });

export function validateOutgoing(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, number>();
  config.outgoing_rest.forEach((c, i) => {
    const at = seen.get(c.name);
    if (at !== undefined) issues.push({ path: ['outgoing_rest', i, 'name'], message: `duplicate connection name '${c.name}' (also outgoing_rest[${at}])` });
    else seen.set(c.name, i);
    if (c.security !== undefined) {
      const def = config.security.find((s) => s.name === c.security);
      if (!def) issues.push({ path: ['outgoing_rest', i, 'security'], message: `no security definition named '${c.security}'` });
      else if (!(def.type in OUTGOING_AUTH_CAPABILITY)) {
        issues.push({ path: ['outgoing_rest', i, 'security'], message: `'${c.security}' is of type ${def.type}, which outgoing connections cannot use (${Object.keys(OUTGOING_AUTH_CAPABILITY).join(', ')})` });
      }
    }
    if (c.tls !== undefined && !c.address.startsWith('https:')) issues.push({ path: ['outgoing_rest', i, 'tls'], message: 'tls settings apply only to an https address' });
  });
  return issues;
}
