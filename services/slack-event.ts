import { service } from 'svc/sdk';

/**
 * The work of one Slack Events API event, queued by webhook-slack with invokeAsync
 * (docs/webhooks.md): runs from the background queue, after Slack already has its 200, and is
 * retried with backoff if it throws. No channel calls it; its input was built by webhook-slack
 * after the signature was verified.
 */
interface SlackEventInput {
  event_id: string | null;
  team_id: string | null;
  retry: string | null;
  event: { type?: string; subtype?: string; user?: string; channel?: string; text?: string };
}

export default service({
  handle(ctx) {
    const { event_id, team_id, retry, event } = ctx.input as unknown as SlackEventInput;
    // At least once: Slack may send an event again (retry) and svc may run this again after a
    // failure; event_id is the idempotency key for whatever this code changes.
    const key = event_id ?? ctx.delivery?.cid ?? ctx.cid;
    const again = retry === null ? '' : `, Slack retry ${retry}`;
    switch (event.type) {
      case 'app_mention':
        ctx.log.info(`Slack app_mention by ${event.user ?? '-'} in ${event.channel ?? '-'}: ${event.text ?? ''} (event ${key}, team ${team_id ?? '-'}${again})`);
        break;
      case 'message':
        ctx.log.info(`Slack message${event.subtype ? ` (${event.subtype})` : ''} in ${event.channel ?? '-'} (event ${key}, team ${team_id ?? '-'}${again})`);
        break;
      default:
        ctx.log.info(`Slack event ${event.type ?? 'unknown'} ignored (event ${key})`);
    }
    return {};
  },
});
