import { describe, expect, it } from 'vitest';
import { ConfigError, readSource, validate } from '../../../../kernel/config/store.ts';
import { topicFilterProblem, topicNameProblem } from '../../../../plugins/connectors/mqtt/schema.ts';

const plugins = [(await import('../../../../plugins/connectors/mqtt/plugin.ts')).default, (await import('../../../../plugins/formats/json/plugin.ts')).default];

function issuesOf(yaml: string): string[] {
  try {
    validate(readSource(yaml, {}), plugins, {});
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
  return [];
}

describe('topic filters and names', () => {
  it('accepts filters by the MQTT rules', () => {
    for (const f of ['a', 'a/b/c', '+', '#', 'a/+/c', 'a/#', '+/+/#', '/', 'a//b', '$SYS/#', '$share/g/a/+', 'zoë/°C']) expect(topicFilterProblem(f), f).toBeUndefined();
  });
  it('refuses empty filters, partial-level wildcards, # not last, null characters, $share without group or filter, and over 65535 bytes', () => {
    expect(topicFilterProblem('')).toMatch(/empty/);
    expect(topicFilterProblem('a/b+')).toMatch(/\+/);
    expect(topicFilterProblem('a+/b')).toMatch(/\+/);
    expect(topicFilterProblem('a/#/b')).toMatch(/#/);
    expect(topicFilterProblem('a/b#')).toMatch(/#/);
    expect(topicFilterProblem('a\u0000b')).toMatch(/null/);
    expect(topicFilterProblem('$share/g')).toMatch(/share/);
    expect(topicFilterProblem('$share//a')).toMatch(/share/);
    expect(topicFilterProblem('$share/g+/a')).toMatch(/share/);
    expect(topicFilterProblem('é'.repeat(32_768))).toMatch(/65535 bytes/);
    expect(topicFilterProblem('a'.repeat(65_535))).toBeUndefined();
  });
  it('refuses wildcards in a topic to publish to', () => {
    expect(topicNameProblem('a/b')).toBeUndefined();
    expect(topicNameProblem('a/+')).toMatch(/wildcards/);
    expect(topicNameProblem('#')).toMatch(/wildcards/);
    expect(topicNameProblem('')).toMatch(/empty/);
  });
});

describe('mqtt_connection and channel_mqtt config', () => {
  it('fills defaults', () => {
    const cfg = validate(readSource("mqtt_connection:\n  - { name: s, url: 'mqtt://broker' }\nchannel_mqtt:\n  - { name: c, url: 'mqtts://broker:8883', topics: [a/#], service: svc }\n", {}), plugins, {});
    expect(cfg.mqtt_connection[0]).toEqual({ name: 's', url: 'mqtt://broker', protocol_version: 4, keepalive_s: 60, connect_timeout_ms: 10_000, reconnect: { min_ms: 1_000, max_ms: 30_000 }, ready_check: false, publish_timeout_ms: 5_000, max_message_bytes: 1_048_576 });
    expect(cfg.channel_mqtt[0]).toMatchObject({ qos: 1, clean_session: false, data_format: 'json', delivery: { use_queue: false, max_attempts: 5 }, session_expiry_s: 604_800 });
  });

  it('refuses bad urls, credentials in the url, bad filters, and unknown keys', () => {
    const issues = issuesOf("mqtt_connection:\n  - { name: a, url: 'http://broker' }\n  - { name: b, url: 'mqtt://u:p@broker' }\n  - { name: c, url: 'mqtt://b', extra: 1 }\nchannel_mqtt:\n  - { name: c, url: 'mqtt://b', topics: ['a/#/b', ''], service: s }\n  - { name: d, url: 'mqtt://b', topics: [], service: s }\n").join('\n');
    expect(issues).toMatch(/mqtt_connection\[0\]\.url.*without credentials/);
    expect(issues).toMatch(/mqtt_connection\[1\]\.url/);
    expect(issues).toMatch(/mqtt_connection\[2\].*extra/);
    expect(issues).toMatch(/channel_mqtt\[0\]\.topics\[0\].*'#'/);
    expect(issues).toMatch(/channel_mqtt\[0\]\.topics\[1\].*empty/);
    expect(issues).toMatch(/channel_mqtt\[1\]\.topics/);
  });

  it('checks names, formats, QoS 2 on MQTT 3.1.1, tls on a plain address, password and secret, backoff, client ids', () => {
    const issues = issuesOf(`mqtt_connection:
  - { name: a, url: 'mqtt://b', tls: { reject_unauthorized: false }, password: x, password_secret: y }
  - { name: a, url: 'mqtt://b' }
channel_mqtt:
  - { name: c, url: 'mqtt://b', topics: [x], service: s, data_format: nope, qos: 2, client_id: same }
  - { name: c, url: 'mqtt://b', topics: [x], service: s, client_id: same }
`).join('\n');
    expect(issues).toMatch(/mqtt_connection\[1\]\.name.*duplicate/);
    expect(issues).toMatch(/mqtt_connection\[0\]\.tls/);
    expect(issues).toMatch(/mqtt_connection\[0\]\.password_secret.*not both/);
    expect(issues).toMatch(/channel_mqtt\[1\]\.name.*duplicate/);
    expect(issues).toMatch(/channel_mqtt\[0\]\.data_format.*nope/);
    expect(issues).toMatch(/channel_mqtt\[0\]\.qos.*protocol_version 5/);
    expect(issues).toMatch(/channel_mqtt\[1\]\.client_id/);
    // The backoff is checked with the entry's own fields, before the checks across entries.
    expect(issuesOf("mqtt_connection:\n  - { name: a, url: 'mqtt://b', reconnect: { min_ms: 5000, max_ms: 1000 } }\n").join('\n')).toMatch(/mqtt_connection\[0\]\.reconnect\.max_ms: must be at least min_ms/);
    expect(issuesOf("channel_mqtt:\n  - { name: c, url: 'mqtt://b', topics: [x], service: s, qos: 2, protocol_version: 5 }\n")).toEqual([]);
  });
});
