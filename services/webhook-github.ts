import { secret, service, Unauthorized } from 'svc/sdk';

/**
 * Receives GitHub webhooks on a channel with `security: none`: GitHub signs each delivery
 * with the webhook's secret, `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`.
 * A missing or wrong signature is answered 401 before anything acts on the event.
 *
 * The secret is the named secret `github-webhook` of the config (`secrets:`, with this service
 * in its `services`), set to the one in the GitHub webhook settings with
 * `svc secret set github-webhook`. The host verifies with it; this code never sees it.
 */
const WEBHOOK_SECRET = secret('github-webhook');
const PREFIX = 'sha256=';

export default service({
  async POST(ctx) {
    const signature = ctx.headers['x-hub-signature-256'];
    if (signature === undefined || !signature.startsWith(PREFIX)) throw new Unauthorized('Missing signature');
    // The raw body, byte for byte: the parsed payload would not hash the same.
    if (!(await WEBHOOK_SECRET.verifyHmacSha256Hex(ctx.rawBody, signature.slice(PREFIX.length)))) {
      throw new Unauthorized('Invalid signature');
    }
    const event = ctx.headers['x-github-event'] ?? 'unknown';
    ctx.log.info(`GitHub event ${event} (delivery ${ctx.headers['x-github-delivery'] ?? '-'})`);
    return { received: event };
  },
});
