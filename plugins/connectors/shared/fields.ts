import { z } from 'zod';
import { scopedRef } from '../../../sdk/plugin/index.ts';

/**
 * Config keys every connector spells the same way, so a user who set one connector's knows the
 * next one's: the reconnect backoff, the readiness switch and the services allowed.
 */

/** Backoff of reconnect attempts: from min_ms, doubled per failed attempt, up to max_ms. */
export function reconnectSchema(defaults: { min_ms: number; max_ms: number }) {
  return z
    .object({
      min_ms: z.number().int().min(10).max(300_000).default(defaults.min_ms).describe('Wait before the first reconnect attempt after a loss; doubles per failed attempt.'),
      max_ms: z.number().int().min(10).max(3_600_000).default(defaults.max_ms).describe('Longest wait between two reconnect attempts.'),
    })
    .strict()
    .refine((r) => r.max_ms >= r.min_ms, { path: ['max_ms'], message: 'must be at least min_ms' })
    .default(defaults)
    .describe('Reconnect backoff after the connection is lost.');
}

export const readyCheckField = z.boolean().default(false).describe('/ready answers 503 while this is not up (every connection is listed in /ready either way).');

export function allowedServicesField(what: string) {
  return z.array(scopedRef(z.string().min(1))).optional().describe(`Services that may ${what}; every service when absent.`);
}

/** Formats whose own settings an inbound channel may carry under the format's name, as a REST channel does. */
const SETTINGS_FORMATS = ['json', 'xml', 'form', 'csv'] as const;
type SettingsFormat = (typeof SETTINGS_FORMATS)[number];
const settingsField = (format: SettingsFormat) =>
  z.record(z.string(), z.unknown()).optional().describe(`Settings of the ${format} format (data_format: ${format}), the keys of a REST channel's ${format}: key; checked by the format.`);

/** The `json:`, `xml:`, `form:` and `csv:` keys of an inbound channel. */
export const formatSettingsFields = {
  json: settingsField('json'),
  xml: settingsField('xml'),
  form: settingsField('form'),
  csv: settingsField('csv'),
};

type WithFormatSettings = { data_format: string } & Partial<Record<SettingsFormat, Record<string, unknown> | undefined>>;

/** The settings of the channel's own data format, for `kernel.decodeMessage`. */
export function formatSettingsOf(entry: WithFormatSettings): unknown {
  return (SETTINGS_FORMATS as readonly string[]).includes(entry.data_format) ? entry[entry.data_format as SettingsFormat] : undefined;
}

/** A format's settings given on a channel of another data format: the key that is wrong, and why. */
export function formatSettingsIssues(entry: WithFormatSettings): Array<{ key: SettingsFormat; message: string }> {
  return SETTINGS_FORMATS.filter((key) => entry[key] !== undefined && entry.data_format !== key).map((key) => ({ key, message: `${key} settings apply only to data_format: ${key}` }));
}
