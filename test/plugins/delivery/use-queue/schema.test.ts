import { describe, expect, it } from 'vitest';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';
import { ConfigError, readSource, validate } from '../../../../kernel/config/store.ts';
import { loadPlugins } from '../../../../kernel/plugin-loader.ts';
import json from '../../../../plugins/formats/json/plugin.ts';
import useQueue from '../../../../plugins/delivery/use-queue/plugin.ts';
import { backoffMs } from '../../../../plugins/delivery/use-queue/outcome.ts';
import { optionsSchema } from '../../../../plugins/delivery/use-queue/schema.ts';

const plugins = [json, useQueue];

function parse(channelExtra: string): SvcConfig {
  return validate(readSource(`channel_rest:\n  - { name: hook, url_path: /hook, service: s, security: none${channelExtra} }\n`, {}), plugins, {});
}

function issues(channelExtra: string): string {
  try {
    parse(channelExtra);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.join('\n');
    throw err;
  }
  throw new Error('the config was accepted');
}

describe('use_queue and delivery on channels', () => {
  it('use_queue defaults to false and delivery is absent', () => {
    const ch = parse('').channel_rest[0]!;
    expect(ch.use_queue).toBe(false);
    expect(ch.delivery).toBeUndefined();
  });

  it('fills the documented delivery defaults', () => {
    expect(parse(', use_queue: true, delivery: {}').channel_rest[0]!.delivery).toEqual({
      max_attempts: 5,
      base_delay_ms: 1000,
      max_delay_ms: 60000,
      jitter: true,
      concurrency: 2,
      max_depth: 10000,
    });
    expect(parse(', use_queue: true, delivery: { max_attempts: 3, jitter: false }').channel_rest[0]!.delivery).toMatchObject({ max_attempts: 3, jitter: false, base_delay_ms: 1000 });
  });

  it('refuses delivery on a channel without use_queue: true, naming the channel', () => {
    expect(issues(', delivery: { max_attempts: 3 }')).toBe("channel_rest[0].delivery: channel 'hook' sets delivery without use_queue: true");
    expect(issues(', use_queue: false, delivery: {}')).toMatch(/channel 'hook' sets delivery without use_queue: true/);
  });

  it.each([
    ['zero attempts', 'max_attempts: 0', /delivery\.max_attempts/],
    ['a negative delay', 'base_delay_ms: -1', /delivery\.base_delay_ms/],
    ['zero concurrency', 'concurrency: 0', /delivery\.concurrency/],
    ['a zero depth', 'max_depth: 0', /delivery\.max_depth/],
    ['a fractional attempt count', 'max_attempts: 1.5', /delivery\.max_attempts/],
    ['an unknown key', 'retries: 3', /delivery.*retries/],
  ])('refuses %s', (_label, entry, message) => {
    expect(issues(`, use_queue: true, delivery: { ${entry} }`)).toMatch(message);
  });

  it('refuses a use_queue that is not a boolean', () => {
    expect(issues(', use_queue: "yes"')).toMatch(/channel_rest\[0\]\.use_queue/);
  });

  it('without the plugin, use_queue is an unknown key', () => {
    expect(() => validate(readSource('channel_rest:\n  - { name: c, url_path: /c, service: s, security: none, use_queue: true }\n', {}), [json], {})).toThrow(/no enabled plugin handles 'use_queue'/);
  });
});

describe('plugin options', () => {
  it('defaults: background delivery defaults, max_running derived from the sandbox, a 5 s stop wait', () => {
    const o = optionsSchema.parse(undefined);
    expect(o.background).toMatchObject({ max_attempts: 5, concurrency: 2, max_depth: 10000 });
    expect(o.max_running).toBeUndefined();
    expect(o.stop_wait_ms).toBe(5000);
  });

  it('is enabled by default as a bundled plugin, and refuses bad options naming the field', async () => {
    const loaded = await loadPlugins({}, '.');
    expect(loaded.map((l) => l.plugin.name)).toContain('use-queue');
    await expect(loadPlugins({ 'use-queue': { enabled: true, config: { max_running: 0 } } }, '.')).rejects.toThrow(/plugin 'use-queue': plugins\.use-queue\.config\.max_running/);
    await expect(loadPlugins({ 'use-queue': { enabled: true, config: { background: { concurrency: 0 } } } }, '.')).rejects.toThrow(/background\.concurrency/);
  });
});

describe('backoff', () => {
  const settings = { max_attempts: 10, base_delay_ms: 100, max_delay_ms: 1000, jitter: false, concurrency: 1, max_depth: 10 };
  it('doubles per attempt up to the ceiling', () => {
    expect([1, 2, 3, 4, 5, 6].map((a) => backoffMs(settings, a, () => 0))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });
  it('with jitter: a random wait between 0 and the ceiling', () => {
    const jittered = { ...settings, jitter: true };
    expect(backoffMs(jittered, 3, () => 0)).toBe(0);
    expect(backoffMs(jittered, 3, () => 0.5)).toBe(200);
    expect(backoffMs(jittered, 3, () => 0.999999)).toBe(400);
    expect(backoffMs(jittered, 9, () => 0.25)).toBe(250);
  });
});
