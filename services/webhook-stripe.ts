import { secret, service, Unauthorized } from 'svc/sdk';

/**
 * Receives Stripe webhooks on a channel with `security: none`. Stripe signs
 * `<t>.<raw body>` with the endpoint's signing secret and sends
 * `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]` (several v1 while a secret rolls).
 * A missing or wrong signature, or a timestamp more than 300 s away from now (a replay),
 * is answered 401.
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

export default service({
  async POST(ctx) {
    const header = ctx.headers['stripe-signature'];
    const parsed = header === undefined ? undefined : parseSignatureHeader(header);
    if (parsed === undefined) throw new Unauthorized('Missing signature');
    const nowSeconds = Math.floor(Date.now() / 1000);
    if (Math.abs(nowSeconds - parsed.timestamp) > TOLERANCE_SECONDS) throw new Unauthorized('Signature timestamp outside the tolerance');
    const signedPayload = `${parsed.timestamp}.${ctx.rawBody}`;
    let valid = false;
    // Every candidate is checked (no early exit): each check is timing-safe on the host.
    for (const signature of parsed.signatures) {
      if (await SIGNING_SECRET.verifyHmacSha256Hex(signedPayload, signature)) valid = true;
    }
    if (!valid) throw new Unauthorized('Invalid signature');
    const event = ctx.payload as { id?: unknown; type?: unknown } | undefined;
    const type = typeof event?.type === 'string' ? event.type : 'unknown';
    ctx.log.info(`Stripe event ${type}`);
    return { received: type };
  },
});
