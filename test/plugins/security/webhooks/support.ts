import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { TestKernel } from '../../../helpers/kernel.ts';

/** Test support for the webhook samples: the shipped service files, senders' signatures, log lines. */

/** A sample service exactly as shipped in services/. */
export const sampleCode = (name: string): string => readFileSync(new URL(`../../../../services/${name}.ts`, import.meta.url), 'utf8');

export const hmacHex = (key: string, data: string): string => createHmac('sha256', key).update(data, 'utf8').digest('hex');

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** GitHub: `X-Hub-Signature-256: sha256=<hex HMAC of the body>`. */
export const githubSignature = (key: string, body: string): string => `sha256=${hmacHex(key, body)}`;

/** Stripe: `Stripe-Signature: t=<seconds>,v1=<hex HMAC of "<t>.<body>">`. */
export const stripeSignature = (key: string, body: string, t: number): string => `t=${t},v1=${hmacHex(key, `${t}.${body}`)}`;

/** Slack: the two headers, over `v0:<t>:<body>`. */
export const slackHeaders = (key: string, body: string, t = nowSeconds()): Record<string, string> => ({
  'x-slack-request-timestamp': String(t),
  'x-slack-signature': `v0=${hmacHex(key, `v0:${t}:${body}`)}`,
});

export type LogLine = Record<string, unknown>;

/** Waits (polling 20 ms apart) for a log line of `service` whose message matches. */
export async function logLine(logs: LogLine[], service: string, msg: RegExp, timeoutMs = 10_000): Promise<LogLine> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const line = logs.find((l) => l.service === service && typeof l.msg === 'string' && msg.test(l.msg));
    if (line) return line;
    if (Date.now() > end) throw new Error(`no log line of ${service} matching ${msg} in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The messages the samples log themselves (they start with the sender's name), not the kernel's lines about them. */
export const messagesOf = (logs: LogLine[], service: string): string[] =>
  logs.filter((l) => l.service === service && typeof l.msg === 'string' && /^(GitHub|Stripe|Slack) /.test(l.msg)).map((l) => l.msg as string);

export function post(k: TestKernel, url: string, body: string, headers: Record<string, string>, contentType = 'application/json') {
  return k.app.inject({ method: 'POST', url, payload: body, headers: { 'content-type': contentType, ...headers } });
}
