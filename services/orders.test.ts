import { NotFound, Conflict } from 'svc/sdk';
import { describe, expect, test, testService } from 'svc/sdk/testing';

// `svc test` runs this file in Node and services/orders.ts in the sandbox, as `svc start` would.
const orders = testService('orders');

describe('orders', () => {
  test('POST creates an order: 201, its Location, the default quantity', async () => {
    const res = await orders.post({ id: 'A1', item: 'pen' });
    expect(res.status).toBe(201);
    expect(res.headers['Location']).toBe('/orders/A1');
    expect(res.body).toEqual({ id: 'A1', item: 'pen', qty: 1 });
  });

  test('GET reads it back; an unknown id is NotFound', async () => {
    expect((await orders.get({ id: 'A1' })).body).toMatchObject({ item: 'pen' });
    const missing = await orders.get({ id: 'nope' });
    expect(missing.status).toBe(404);
    expect(missing.error).toBeInstanceOf(NotFound);
    expect(missing.error?.message).toBe('no order nope');
  });

  test('a second POST with the same id is a Conflict', async () => {
    const again = await orders.post({ id: 'A1', item: 'ink', qty: 3 });
    expect(again.error).toBeInstanceOf(Conflict);
    expect(again.status).toBe(409);
  });

  test('input is checked against the model before the service runs', async () => {
    const res = await orders.post({ id: 'A2', qty: 'lots' });
    expect(res.status).toBe(400);
    expect(res.error?.message).toMatch("field 'qty' must be an integer");
  });

  test('DELETE answers 204; PUT has no handler: 405', async () => {
    expect((await orders.delete({ id: 'A1' })).status).toBe(204);
    expect((await orders.put({ id: 'A1' })).status).toBe(405);
  });

  test('reset() deploys it again: the orders kept in the isolate are gone', async () => {
    await orders.post({ id: 'B1', item: 'pad' });
    await orders.reset();
    expect((await orders.get({ id: 'B1' })).status).toBe(404);
  });
});
