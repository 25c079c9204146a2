import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import pubsubPlugin from '../../../../plugins/pubsub/engine/plugin.ts';
import { publishRequestA } from '../../../../plugins/pubsub/variant-a/schemas.ts';
import { getRequestB, publishRequestB } from '../../../../plugins/pubsub/variant-b/schemas.ts';
import type { CliEnv } from '../../../../kernel/plugin.ts';
import { json, PUBSUB_CONFIG, startPubSub, type PubSubKernel } from './helpers.ts';

let k: PubSubKernel;
beforeAll(async () => {
  k = await startPubSub();
});
afterAll(async () => {
  await k?.close();
});

type Doc = { openapi: string; paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, Record<string, any>> } };

function refsIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => refsIn(v, out));
  else if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if (key === '$ref' && typeof v === 'string') out.push(v);
      else refsIn(v, out);
    }
  }
  return out;
}

describe('OpenAPI document', () => {
  it('is served over HTTP without credentials', async () => {
    const res = await k.call('GET', '/svc/pubsub/openapi.json', undefined);
    expect(res.statusCode).toBe(200);
    const doc = json(res) as Doc;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/pubsub/messages/get',
      '/pubsub/subscribe/topic/{topic_name}',
      '/pubsub/topic/{topic_name}',
      '/svc/pubsub/subscribe/topic/{topic_name}',
      '/svc/pubsub/topic/{topic_name}',
    ]);
    expect(Object.keys(doc.paths['/svc/pubsub/topic/{topic_name}']!).sort()).toEqual(['patch', 'post']);
    for (const ref of refsIn(doc)) expect(doc.components.schemas[ref.replace('#/components/schemas/', '')], ref).toBeDefined();
  });

  it('is generated from the zod schemas that validate requests', async () => {
    const doc = json(await k.call('GET', '/svc/pubsub/openapi.json', undefined)) as Doc;
    const s = doc.components.schemas;
    const { $schema: _a, ...a } = z.toJSONSchema(publishRequestA, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
    expect(s.PublishRequestA).toEqual(a);
    const { $schema: _b, ...b } = z.toJSONSchema(publishRequestB, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
    expect(s.PublishRequestB).toEqual(b);
    expect(s.PublishRequestA!.properties.priority).toMatchObject({ minimum: 1, maximum: 9, default: 5 });
    expect(s.PublishRequestB!.properties.priority).toMatchObject({ minimum: 0, maximum: 9, default: 5 });
    expect(s.PublishRequestB!.properties.expiration).toMatchObject({ default: 31_536_000 });
    expect(s.PublishRequestA!.required).toEqual(['data']);
    expect(s.GetRequestB).toEqual(Object.fromEntries(Object.entries(z.toJSONSchema(getRequestB, { target: 'draft-2020-12', io: 'input' })).filter(([key]) => key !== '$schema')));
    expect(s.GetRequestB!.properties.max_messages).toMatchObject({ default: 50, maximum: 1000 });
    expect(s.GetRequestB!.properties.max_len).toMatchObject({ default: 20_000_000, maximum: 20_000_000 });
    expect(s.MessageA!.required).toEqual(expect.arrayContaining(['data', 'delivery_count', 'priority', 'pub_time_iso', 'size', 'sub_key', 'topic_name']));
    expect(s.ErrorB!.properties.is_ok).toEqual({ type: 'boolean', const: false });
  });

  it('svc openapi prints the same document', async () => {
    const lines: string[] = [];
    const env = { out: (l: string) => lines.push(l), err: () => undefined, openApiFragments: () => k.kernel.api.openApiFragments() } as unknown as CliEnv;
    const command = pubsubPlugin.cli!.find((c) => c.words.join(' ') === 'openapi')!;
    expect(await command.run([], env)).toBe(0);
    expect(JSON.parse(lines.join('\n'))).toEqual(json(await k.call('GET', '/svc/pubsub/openapi.json', undefined)));
  });

  it('lists only the variants that are enabled', async () => {
    const onlyA = await startPubSub({ config: PUBSUB_CONFIG + '\nplugins:\n  pubsub-rest-b: false\n' });
    try {
      const doc = json(await onlyA.call('GET', '/svc/pubsub/openapi.json', undefined)) as Doc;
      expect(Object.keys(doc.paths).sort()).toEqual(['/svc/pubsub/subscribe/topic/{topic_name}', '/svc/pubsub/topic/{topic_name}']);
      expect(Object.keys(doc.components.schemas).some((name) => name.endsWith('B'))).toBe(false);
      expect((await onlyA.call('POST', '/pubsub/messages/get', undefined)).statusCode).toBe(404);
    } finally {
      await onlyA.close();
    }
  });
});
