import { invokeAsync, secret, service, Unauthorized, type Context } from 'svc/sdk';

/**
 * Receives Slack's Events API (docs/webhooks.md). Its channel has `security: none` and Use queue
 * OFF, the spec's other path: Slack wants its answer within 3 s, and the one-time
 * `url_verification` must be answered with its `challenge` in that very response, which a
 * queued channel (always `200 {"cid"}`) cannot do. So this service verifies the request and
 * answers at once; the work of an `event_callback` is queued with invokeAsync and runs in the
 * `slack-event` service, retried there if it fails.
 *
 * Slack signs `v0:<X-Slack-Request-Timestamp>:<raw body>` with the app's signing secret and
 * sends `X-Slack-Signature: v0=<hex HMAC-SHA256>`. A missing or wrong signature, or a
 * timestamp more than 300 s from now, is answered 401. The secret is the named secret
 * `slack-signing`, set with `svc secret set slack-signing`; this code never sees it.
 */
const SIGNING_SECRET = secret('slack-signing');
const VERSION = 'v0';
const TOLERANCE_SECONDS = 300;

interface SlackBody {
  type?: string;
  challenge?: string;
  team_id?: string;
  api_app_id?: string;
  event_id?: string;
  event_time?: number;
  event?: Record<string, unknown>;
}

async function verify(ctx: Context): Promise<void> {
  const timestamp = ctx.headers['x-slack-request-timestamp'];
  const signature = ctx.headers['x-slack-signature'];
  if (timestamp === undefined || signature === undefined || !signature.startsWith(`${VERSION}=`) || !/^[0-9]{1,12}$/.test(timestamp)) {
    throw new Unauthorized('Missing signature');
  }
  if (Math.abs(Math.floor(Date.now() / 1000) - Number(timestamp)) > TOLERANCE_SECONDS) throw new Unauthorized('Signature timestamp outside the tolerance');
  const base = `${VERSION}:${timestamp}:${ctx.rawBody}`;
  if (!(await SIGNING_SECRET.verifyHmacSha256Hex(base, signature.slice(VERSION.length + 1)))) throw new Unauthorized('Invalid signature');
}

export default service({
  async POST(ctx) {
    await verify(ctx);
    const body = (ctx.payload ?? {}) as SlackBody;
    switch (body.type) {
      case 'url_verification':
        return { challenge: body.challenge ?? '' };
      case 'event_callback': {
        // Slack retries an event it got no 2xx for (X-Slack-Retry-Num); slack-event deduplicates by event_id.
        const queued = await invokeAsync('slack-event', {
          event_id: body.event_id ?? null,
          team_id: body.team_id ?? null,
          event_time: body.event_time ?? null,
          retry: ctx.headers['x-slack-retry-num'] ?? null,
          event: body.event ?? {},
        });
        ctx.log.info(`Slack event ${body.event_id ?? '-'} queued as ${queued}`);
        return { ok: true };
      }
      default:
        ctx.log.info(`Slack request type ${body.type ?? 'unknown'} ignored`);
        return { ok: true };
    }
  },
});
