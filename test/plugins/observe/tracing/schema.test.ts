import { describe, expect, it } from 'vitest';
import { shownUrl, tracesUrl, tracingOptionsSchema } from '../../../../plugins/observe/tracing/schema.ts';

describe('tracing options', () => {
  it('default to no export', () => {
    const options = tracingOptionsSchema.parse(undefined);
    expect(options).toEqual({ headers: {}, service_name: 'svc', sampling_ratio: 1, batch_delay_ms: 5000, max_queue: 2048, timeout_ms: 10_000 });
    expect(options.endpoint).toBeUndefined();
    expect(tracingOptionsSchema.parse({})).toEqual(options);
  });

  it.each([
    ['a non-HTTP endpoint', { endpoint: 'ftp://collector/v1/traces' }, 'endpoint'],
    ['an endpoint that is no URL', { endpoint: 'collector:4318' }, 'endpoint'],
    ['a ratio above 1', { sampling_ratio: 1.5 }, 'sampling_ratio'],
    ['a header name with a space', { headers: { 'x key': 'v' } }, 'headers'],
    ['a header value with a line break', { headers: { 'x-key': 'a\r\nb' } }, 'headers'],
    ['an unknown key', { exporter: 'grpc' }, ''],
  ])('refuse %s, naming the field', (_why, options, field) => {
    const parsed = tracingOptionsSchema.safeParse(options);
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues[0]!.path[0] ?? '').toBe(field);
  });

  it('give a bare collector address the traces path, and keep a full one as it is', () => {
    expect(tracesUrl('http://collector:4318')).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl('http://collector:4318/')).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl('https://otlp.example.com/otlp/v1/traces')).toBe('https://otlp.example.com/otlp/v1/traces');
  });

  it('log the endpoint without credentials or query', () => {
    expect(shownUrl('https://user:pass@otlp.example.com/v1/traces?api_key=k')).toBe('https://otlp.example.com/v1/traces');
  });
});
