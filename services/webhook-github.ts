import { service, Unauthorized, verifyHmacSha256Hex } from 'svc/sdk';

/**
 * Receives GitHub webhooks on a channel with `security: none`: GitHub signs each delivery
 * with the webhook's secret, `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`.
 * A missing or wrong signature is answered 401 before anything acts on the event.
 *
 * The secret must equal the one set in the GitHub webhook settings. Services cannot read
 * config or environment yet, so it is a constant here: replace it before deploying.
 */
const WEBHOOK_SECRET = 'replace-with-the-github-webhook-secret';
const PREFIX = 'sha256=';

export default service({
  async POST(ctx) {
    const signature = ctx.headers['x-hub-signature-256'];
    if (signature === undefined || !signature.startsWith(PREFIX)) throw new Unauthorized('Missing signature');
    // The raw body, byte for byte: the parsed payload would not hash the same.
    if (!(await verifyHmacSha256Hex(WEBHOOK_SECRET, ctx.rawBody, signature.slice(PREFIX.length)))) {
      throw new Unauthorized('Invalid signature');
    }
    const event = ctx.headers['x-github-event'] ?? 'unknown';
    ctx.log.info(`GitHub event ${event} (delivery ${ctx.headers['x-github-delivery'] ?? '-'})`);
    return { received: event };
  },
});
