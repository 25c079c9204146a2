import { describe, expect, it } from 'vitest';
import { formatSettingsIssues, formatSettingsOf } from '../../../../plugins/connectors/shared/fields.ts';
import { channelAmqpSchema } from '../../../../plugins/connectors/amqp/schema.ts';
import { channelEntrySchema as channelMqttSchema } from '../../../../plugins/connectors/mqtt/schema.ts';
import { channelFileSchema } from '../../../../plugins/connectors/file-pickup/schema.ts';

describe('the format settings keys every inbound channel shares', () => {
  it('are json, xml, form and csv on every inbound channel schema', () => {
    for (const schema of [channelAmqpSchema, channelMqttSchema, channelFileSchema]) {
      for (const key of ['json', 'xml', 'form', 'csv']) expect(Object.keys(schema.shape), key).toContain(key);
    }
  });

  it("hands the decoder the settings of the channel's own format only", () => {
    expect(formatSettingsOf({ data_format: 'csv', csv: { delimiter: ';' }, json: { x: 1 } })).toEqual({ delimiter: ';' });
    expect(formatSettingsOf({ data_format: 'hl7' })).toBeUndefined();
  });

  it('names a format key given on a channel of another format', () => {
    expect(formatSettingsIssues({ data_format: 'json', csv: { delimiter: ';' } })).toEqual([{ key: 'csv', message: 'csv settings apply only to data_format: csv' }]);
    expect(formatSettingsIssues({ data_format: 'csv', csv: {} })).toEqual([]);
  });
});
