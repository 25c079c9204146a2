import { Conflict } from 'svc/sdk';
import { describe, expect, test, testService } from 'svc/sdk/testing';

// The inventory system is faked by route (paths as config/svc.yaml's url_path /stock/{sku} builds
// them); what the service published is recorded.
const reserve = testService('reserve', {
  outgoing: {
    inventory: {
      'GET /stock/pen': { body: { sku: 'pen', available: 5 } },
      'GET /stock/ink': { body: { sku: 'ink', available: 0 } },
      'GET /stock/cake': { status: 404, body: { error: 'unknown sku' } },
      POST: (request) => ({ status: 201, body: { reservation: `R-${(request.payload as { order: string }).order}` } }),
    },
  },
});

describe('reserve', () => {
  test('reserves stock and announces the reservation', async () => {
    const res = await reserve.post({ id: '42', sku: 'pen', qty: 2 });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ order: '42', sku: 'pen', qty: 2, reservation: 'R-42' });
    expect(reserve.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /stock/pen', 'POST /stock/pen']);
    expect(reserve.requests[1]!.payload).toEqual({ order: '42', qty: 2 });
    expect(reserve.published).toMatchObject([{ topic: '/orders/reserved', data: { order: '42', reservation: 'R-42' } }]);
    expect(res.logs).toContain({ level: 'info', message: 'reserved 2 pen for order 42' });
  });

  test('out of stock is a Conflict, and nothing is published', async () => {
    const before = reserve.published.length;
    const res = await reserve.post({ id: '43', sku: 'ink' });
    expect(res.error).toBeInstanceOf(Conflict);
    expect(res.error?.message).toBe('only 0 ink in stock');
    expect(reserve.published).toHaveLength(before);
  });

  test("an unknown item is the inventory's 404, passed on", async () => {
    expect((await reserve.post({ id: '44', sku: 'cake' })).status).toBe(404);
  });

  test('an inventory that does not answer is a 504 (gatewayError)', async () => {
    const down = testService('reserve', { outgoing: { inventory: { fail: 'timeout' } } });
    const res = await down.post({ id: '45', sku: 'pen' });
    expect(res.status).toBe(504);
    expect(down.published).toEqual([]);
  });
});
