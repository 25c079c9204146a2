import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient, resourcePath, startAdmin, type AdminKernel } from '../../admin/api/support.ts';
import { BROKER_URL } from './support.ts';

let k: AdminKernel;
let admin: AdminClient;

beforeAll(async () => {
  k = await startAdmin({ config: `mqtt_connection:\n  - { name: sensors, url: '${BROKER_URL}', username: u, password: top-secret }\n` });
  admin = new AdminClient(k.admin);
  expect((await admin.login()).status).toBe(200);
});
afterAll(() => k?.close());

describe('the admin API', () => {
  it('lists mqtt_connection and channel_mqtt, generated from their schemas, the password write-only', async () => {
    const r = await admin.get('/admin/api/resources');
    const byName = new Map<string, any>(r.body.sections.map((s: any) => [s.name, s]));
    expect(byName.get('mqtt_connection')).toMatchObject({ count: 1, writeOnly: expect.arrayContaining(['password']) });
    expect(byName.get('channel_mqtt')).toMatchObject({ count: 0 });
    expect(byName.get('channel_mqtt').schema.properties.topics.description).toMatch(/Topic filters/);
    const entry = await admin.get(resourcePath('mqtt_connection', 'sensors'));
    expect(entry.status).toBe(200);
    expect(JSON.stringify(entry.body)).not.toContain('top-secret');
  });

  it('refuses an invalid channel with the issue at its field', async () => {
    const r = await admin.post(resourcePath('channel_mqtt'), { name: 'bad', url: BROKER_URL, topics: ['a/#/b'], service: 'echo' });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toMatch(/'#' must be a whole level/);
  });
});
