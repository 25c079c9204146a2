import { readFileSync } from 'node:fs';
import type * as Imap from 'imapflow';
import type { ImapFlow, ImapFlowOptions } from 'imapflow';
import { onFirstUse, type KernelApi } from '../../../sdk/plugin/index.ts';
import { resolvePassword } from '../shared/credentials.ts';
import type { ChannelImapEntry } from './schema.ts';

/** The client library, loaded by the first connection. */
const imapFlow = onFirstUse<typeof Imap>(import.meta.url, 'imapflow');

/** `user@host:port/mailbox`: which mailbox a channel's marks in the store belong to. */
export function accountOf(entry: ChannelImapEntry): string {
  return `${entry.username}@${entry.host}:${portOf(entry)}/${entry.mailbox}`;
}

function portOf(entry: ChannelImapEntry): number {
  return entry.port ?? (entry.security === 'tls' ? 993 : 143);
}

/**
 * A connected, logged-in client for a channel (the password read now, so a changed secret takes
 * effect at the next connect). IDLE is ours to start: auto-IDLE would wait 15 s of quiet first.
 * Literals are capped a little above max_message_bytes, so a server sending more than it
 * announced cannot make us buffer more than that.
 */
export async function connectClient(entry: ChannelImapEntry, kernel: KernelApi): Promise<ImapFlow> {
  const password = await resolvePassword(kernel, entry);
  const options: ImapFlowOptions = {
    host: entry.host,
    port: portOf(entry),
    secure: entry.security === 'tls',
    doSTARTTLS: entry.security === 'starttls',
    auth: { user: entry.username, pass: password ?? '' },
    logger: false,
    disableAutoIdle: true,
    connectionTimeout: entry.connect_timeout_ms,
    greetingTimeout: entry.connect_timeout_ms,
    // IDLE is broken and restarted now and then: some servers and NATs drop a connection quiet for long.
    maxIdleTime: 5 * 60_000,
    maxLiteralSize: entry.max_message_bytes + 64 * 1024,
    maxResponseSize: entry.max_message_bytes + 128 * 1024,
    clientInfo: { name: 'svc' },
  };
  if (entry.security !== 'none') {
    const tls: NonNullable<ImapFlowOptions['tls']> = { rejectUnauthorized: entry.tls?.reject_unauthorized ?? true };
    if (entry.tls?.ca_file) tls.ca = [readFileSync(entry.tls.ca_file)];
    if (entry.tls?.server_name) tls.servername = entry.tls.server_name;
    options.tls = tls;
  }
  const client = new (imapFlow().ImapFlow)(options);
  // An 'error' without a listener would be thrown; the 'close' that follows is what we act on.
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** A short reason, safe for /ready and logs: never the password. */
export function safeReason(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown; authenticationFailed?: unknown; responseText?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (e?.authenticationFailed === true || code === 'AUTHENTICATIONFAILED') return 'login refused (user or password)';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ETIMEDOUT' || code === 'CONNECT_TIMEOUT' || code === 'GREETING_TIMEOUT' || /timed? ?out/i.test(message)) return 'timed out';
  if (code === 'ECONNRESET' || code === 'NoConnection' || /closed|Connection not available/i.test(message)) return 'connection lost';
  const tls = certificateReason(code);
  if (tls) return `TLS failed: ${tls}`;
  if (/certificate|self.signed|SSL|TLS|STARTTLS/i.test(message)) return 'TLS failed';
  if (code === 'LiteralTooLarge' || code === 'ResponseTooLarge') return 'server sent more than max_message_bytes';
  if (/Mailbox doesn't exist|NONEXISTENT/i.test(message + String(e?.responseText ?? ''))) return 'mailbox not found';
  return 'IMAP error';
}

/** Node's certificate check codes, as an operator would say them. */
function certificateReason(code: string): string | undefined {
  if (code === 'DEPTH_ZERO_SELF_SIGNED_CERT' || code === 'SELF_SIGNED_CERT_IN_CHAIN') return 'server certificate not trusted (self-signed; set tls.ca_file)';
  if (code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' || code === 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY') return 'server certificate not trusted (unknown issuer; set tls.ca_file)';
  if (code === 'CERT_HAS_EXPIRED') return 'server certificate expired';
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return 'server certificate is for another name (set tls.server_name)';
  return undefined;
}
