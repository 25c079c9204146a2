import { service, t, outgoing, publish, gatewayError, BadGateway, Conflict, NotFound } from 'svc/sdk';

interface Stock {
  sku: string;
  available: number;
}

// The inventory system, an outgoing connection of config/svc.yaml (url_path /stock/{sku}).
const inventory = outgoing('inventory');

/**
 * POST /orders/{id}/reserve {"sku": "pen", "qty": 2} → 201: reserves stock for an order in the
 * inventory system, then announces the reservation on the topic /orders/reserved.
 * services/reserve.test.ts tests it with a fake inventory and a fake publish (`svc test`).
 */
export default service({
  input: { id: t.string(), sku: t.string(), qty: t.integer({ default: 1 }) },
  async POST(ctx) {
    const { id, sku, qty } = ctx.input;
    if (qty < 1) throw new Conflict('qty must be at least 1');
    const stock = await inventory.get<Stock>(ctx.cid, { params: { sku } }).catch(gatewayError);
    if (stock.status === 404) throw new NotFound(`no such item: ${sku}`);
    if (!stock.ok) throw new BadGateway(`inventory answered ${stock.status}`);
    if (stock.data.available < qty) throw new Conflict(`only ${stock.data.available} ${sku} in stock`);
    const reserved = await inventory.post<{ reservation: string }>(ctx.cid, { params: { sku }, payload: { order: id, qty } }).catch(gatewayError);
    if (!reserved.ok) throw new BadGateway(`inventory refused the reservation (${reserved.status})`);
    await publish('/orders/reserved', { order: id, sku, qty, reservation: reserved.data.reservation }, { cid: ctx.cid });
    ctx.log.info(`reserved ${qty} ${sku} for order ${id}`);
    ctx.response.status = 201;
    return { order: id, sku, qty, reservation: reserved.data.reservation };
  },
});
