import { secret, service, Unauthorized, type Context } from 'svc/sdk';

/**
 * Receives Stripe webhooks (docs/webhooks.md). Its channel has `security: none` and
 * `use_queue: true`: Stripe gets `200 {"cid"}` as soon as the event is stored, and this code
 * runs from the queue. Stripe signs `<t>.<raw body>` with the endpoint's signing secret and
 * sends `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]` (several v1 while a secret
 * rolls). A missing or wrong signature, or a timestamp more than 300 s away from the moment the
 * event arrived (a replay of a captured request), throws Unauthorized: the event is
 * dead-lettered at once, not retried.
 *
 * The secret is the named secret `stripe-webhook` of the config (`secrets:`, with this service
 * in its `services`), set to the endpoint's signing secret (whsec_...) with
 * `svc secret set stripe-webhook`. The host verifies with it; this code never sees it.
 */
const SIGNING_SECRET = secret('stripe-webhook');
const TOLERANCE_SECONDS = 300;
/** More v1 entries than a secret roll needs is not a Stripe header. */
const MAX_SIGNATURES = 8;

interface StripeSignature {
  timestamp: number;
  signatures: string[];
}

function parseSignatureHeader(header: string): StripeSignature | undefined {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) return undefined;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') {
      if (timestamp !== undefined || !/^[0-9]{1,12}$/.test(value)) return undefined;
      timestamp = Number(value);
    } else if (key === 'v1') {
      signatures.push(value);
    }
  }
  if (signatures.length > MAX_SIGNATURES) return undefined;
  return timestamp === undefined || signatures.length === 0 ? undefined : { timestamp, signatures };
}

/**
 * When the request reached svc, in unix seconds. From the queue that is when the event was
 * accepted, not now: a retry after a backoff, or an operator's replay an hour later, runs the
 * very request that was fresh on arrival and must verify the same way.
 */
function arrivalSeconds(ctx: Context): number {
  const receivedMs = ctx.delivery === undefined ? Date.now() : Date.parse(ctx.delivery.firstReceivedAt);
  return Math.floor(receivedMs / 1000);
}

async function verify(ctx: Context): Promise<void> {
  const header = ctx.headers['stripe-signature'];
  const parsed = header === undefined ? undefined : parseSignatureHeader(header);
  if (parsed === undefined) throw new Unauthorized('Missing signature');
  if (Math.abs(arrivalSeconds(ctx) - parsed.timestamp) > TOLERANCE_SECONDS) throw new Unauthorized('Signature timestamp outside the tolerance');
  const signedPayload = `${parsed.timestamp}.${ctx.rawBody}`;
  let valid = false;
  // Every candidate is checked (no early exit): each check is timing-safe on the host.
  for (const signature of parsed.signatures) {
    if (await SIGNING_SECRET.verifyHmacSha256Hex(signedPayload, signature)) valid = true;
  }
  if (!valid) throw new Unauthorized('Invalid signature');
}

interface StripeEvent {
  id?: string;
  type?: string;
  data?: { object?: { id?: string; amount?: number; amount_refunded?: number; currency?: string } };
}

export default service({
  async POST(ctx) {
    await verify(ctx);
    const event = (ctx.payload ?? {}) as StripeEvent;
    const type = typeof event.type === 'string' ? event.type : 'unknown';
    const object = event.data?.object ?? {};
    // At least once: Stripe itself may send an event twice, and svc runs it again after a
    // failure or a restart. The event id is the idempotency key for whatever this code changes.
    const eventId = event.id ?? ctx.delivery?.cid ?? ctx.cid;
    switch (type) {
      case 'payment_intent.succeeded':
        ctx.log.info(`Stripe payment ${object.id ?? '-'} succeeded: ${object.amount ?? '?'} ${object.currency ?? ''} (event ${eventId})`);
        break;
      case 'payment_intent.payment_failed':
        ctx.log.info(`Stripe payment ${object.id ?? '-'} failed (event ${eventId})`);
        break;
      case 'charge.refunded':
        ctx.log.info(`Stripe charge ${object.id ?? '-'} refunded: ${object.amount_refunded ?? '?'} ${object.currency ?? ''} (event ${eventId})`);
        break;
      default:
        // Types the endpoint is subscribed to but not handled here are accepted: refusing them would only dead-letter them.
        ctx.log.info(`Stripe event ${type} ignored (event ${eventId})`);
    }
    return { received: type };
  },
});
