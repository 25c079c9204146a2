import { service, t, NotFound, Conflict } from 'svc/sdk';

// A small REST resource with verb handlers: GET reads, POST creates (201 + Location),
// DELETE answers 204; PUT and PATCH have no handler, so they get 405 automatically.
// (State lives in the isolate: a demo. It is per sandbox process, and lost on redeploy and when an
// idle isolate is dropped, after `sandbox.idle_ms` (30 s by default). Keep state in a cache or a database.)
const orders = new Map<string, { id: string; item: string; qty: number }>();

export default service({
  input: { id: t.string({ optional: true }), item: t.string({ optional: true }), qty: t.integer({ default: 1 }) },
  GET(ctx) {
    const order = orders.get(String(ctx.input.id));
    if (!order) throw new NotFound(`no order ${ctx.input.id}`);
    return order;
  },
  POST(ctx) {
    const id = String(ctx.input.id ?? orders.size + 1);
    if (orders.has(id)) throw new Conflict(`order ${id} exists`);
    const order = { id, item: String(ctx.input.item ?? 'unknown'), qty: ctx.input.qty };
    orders.set(id, order);
    ctx.response.status = 201;
    ctx.response.headers['Location'] = `/orders/${id}`;
    return order;
  },
  DELETE(ctx) {
    orders.delete(String(ctx.input.id));
    ctx.response.status = 204;
  },
  OPTIONS(ctx) {
    ctx.response.headers['Allow'] = 'GET, POST, DELETE, OPTIONS';
    ctx.response.status = 204;
  },
});
