import { BadRequest, secret, service, Unauthorized, type Context } from 'svc/sdk';

/**
 * Receives GitHub webhooks (docs/webhooks.md). Its channels have `security: none` and
 * `use_queue: true`: GitHub gets `200 {"cid"}` as soon as the delivery is stored (it waits
 * 10 s at most), and this code runs from the queue. GitHub signs each delivery with the
 * webhook's secret, `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`; a
 * missing or wrong signature throws Unauthorized, which dead-letters the event at once
 * (`svc queue list --state dead`) instead of retrying it.
 *
 * Both of GitHub's content types arrive here: `application/json` on a json channel, and
 * `application/x-www-form-urlencoded` on a `data_format: form` channel, where the event is the
 * JSON text of the form field `payload`. Either way the signature covers the body as sent.
 *
 * The secret is the named secret `github-webhook` (config `secrets:`, with this service in its
 * `services`), set with `svc secret set github-webhook`. The host verifies with it; this code
 * never sees it.
 */
const WEBHOOK_SECRET = secret('github-webhook');
const PREFIX = 'sha256=';

interface GitHubEvent {
  action?: string;
  ref?: string;
  after?: string;
  zen?: string;
  repository?: { full_name?: string };
  pull_request?: { number?: number; title?: string };
  issue?: { number?: number; title?: string };
  commits?: unknown[];
}

async function verify(ctx: Context): Promise<void> {
  const signature = ctx.headers['x-hub-signature-256'];
  if (signature === undefined || !signature.startsWith(PREFIX)) throw new Unauthorized('Missing signature');
  // The raw body, byte for byte: a re-serialized payload would not hash the same.
  if (!(await WEBHOOK_SECRET.verifyHmacSha256Hex(ctx.rawBody, signature.slice(PREFIX.length)))) {
    throw new Unauthorized('Invalid signature');
  }
}

function eventOf(ctx: Context): GitHubEvent {
  const contentType = ctx.headers['content-type'] ?? '';
  if (!contentType.startsWith('application/x-www-form-urlencoded')) return (ctx.payload ?? {}) as GitHubEvent;
  const field = (ctx.payload as Record<string, unknown> | undefined)?.payload;
  if (typeof field !== 'string') throw new BadRequest('Form delivery without a payload field');
  try {
    return JSON.parse(field) as GitHubEvent;
  } catch {
    throw new BadRequest('The payload field is not JSON');
  }
}

export default service({
  async POST(ctx) {
    await verify(ctx);
    const name = ctx.headers['x-github-event'] ?? 'unknown';
    const event = eventOf(ctx);
    const repo = event.repository?.full_name ?? '-';
    // At least once: a retry, a restart or a redelivery from GitHub runs the same event again.
    // X-GitHub-Delivery is GitHub's id of the event (kept when GitHub redelivers it) and
    // ctx.delivery.cid svc's (kept across retries): whatever this code changes elsewhere
    // should carry the first as its idempotency key, so a second run is a no-op.
    const dedupKey = ctx.headers['x-github-delivery'] ?? ctx.delivery?.cid ?? ctx.cid;
    if ((ctx.delivery?.attempt ?? 1) > 1) ctx.log.info(`GitHub delivery ${dedupKey}: attempt ${ctx.delivery!.attempt}, first received ${ctx.delivery!.firstReceivedAt}`);

    switch (name) {
      case 'ping':
        ctx.log.info(`GitHub ping (delivery ${dedupKey}): ${event.zen ?? ''}`);
        break;
      case 'push':
        ctx.log.info(`GitHub push to ${repo} ${event.ref ?? '-'} at ${event.after ?? '-'}, ${event.commits?.length ?? 0} commit(s) (delivery ${dedupKey})`);
        break;
      case 'pull_request':
        ctx.log.info(`GitHub pull request #${event.pull_request?.number ?? '?'} ${event.action ?? '-'} in ${repo} (delivery ${dedupKey})`);
        break;
      case 'issues':
        ctx.log.info(`GitHub issue #${event.issue?.number ?? '?'} ${event.action ?? '-'} in ${repo} (delivery ${dedupKey})`);
        break;
      default:
        // Events the webhook subscribes to but this code does not handle are accepted: refusing them would only dead-letter them.
        ctx.log.info(`GitHub event ${name} ignored (delivery ${dedupKey})`);
    }
    return { received: name };
  },
});
