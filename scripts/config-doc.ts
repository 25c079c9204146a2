/**
 * Writes docs/configuration.md from the zod schemas themselves (the kernel's and every
 * bundled plugin's), so the reference cannot drift from what is validated.
 * Run: npm run docs   (test/kernel/config-doc.test.ts checks the file is current)
 */
import { writeFileSync } from 'node:fs';
import { z } from 'zod';
import { channelBaseShape, serverSchema, tenantSchema, pluginsSchema, securityBaseShape } from '../kernel/config/schema.ts';
import { findBundledPluginFiles, loadPlugins } from '../kernel/plugin-loader.ts';
import type { Plugin } from '../kernel/plugin.ts';

type Json = { type?: string | string[]; description?: string; default?: unknown; enum?: unknown[]; properties?: Record<string, Json>; items?: Json; anyOf?: Json[]; required?: string[]; const?: unknown };

function typeOf(s: Json): string {
  if (s.enum) return s.enum.map((v) => `\`${String(v)}\``).join(' \\| ');
  if (s.const !== undefined) return `\`${String(s.const)}\``;
  if (s.anyOf) return s.anyOf.map(typeOf).join(' or ');
  if (s.type === 'array') return `list of ${s.items ? typeOf(s.items) : 'any'}`;
  if (Array.isArray(s.type)) return s.type.join(' or ');
  return s.type ?? 'any';
}

function rows(schema: z.ZodType, prefix = ''): string[] {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;
  const out: string[] = [];
  const walk = (s: Json, path: string) => {
    for (const [key, prop] of Object.entries(s.properties ?? {})) {
      const name = path ? `${path}.${key}` : key;
      const required = s.required?.includes(key) && prop.default === undefined;
      const def = prop.default === undefined ? '' : `\`${JSON.stringify(prop.default)}\``;
      out.push(`| \`${name}\` | ${typeOf(prop)} | ${required ? 'yes' : ''} | ${def.length > 60 ? '(see below)' : def} | ${(prop.description ?? '').replace(/\|/g, '\\|')} |`);
      if (prop.properties) walk(prop, name);
      if (prop.items?.properties) walk(prop.items, `${name}[]`);
    }
  };
  walk(json, prefix);
  return out;
}

function table(title: string, intro: string, schema: z.ZodType): string {
  return [`## ${title}`, '', intro, '', '| key | type | required | default | description |', '|---|---|---|---|---|', ...rows(schema), ''].join('\n');
}

export async function configurationDoc(): Promise<string> {
  const plugins: Plugin[] = (await loadPlugins({}, '.', findBundledPluginFiles())).map((l) => l.plugin);
  const parts: string[] = [
    '# Configuration reference',
    '',
    'One YAML file (`config/svc.yaml`, `--config FILE` or `SVC_CONFIG`). `${NAME}` in a value is replaced from the environment',
    '(a missing variable is an error). Unknown keys are errors, reported with their path (`channel_rest[2].url_path: …`).',
    'Saving the file applies it at once; a change that fails validation is refused and the running config stays.',
    'This page is generated from the schemas that validate the file (`npm run docs`).',
    '',
    table('server', 'Listener, directories and sandbox limits (plugins add keys: `admin`).', serverSchema.extend(Object.assign({}, ...plugins.map((p) => p.contributes?.serverFields ?? {})))),
    table('plugins', 'Bundled plugins are enabled unless set to `false`; a third-party plugin is `{module: ./path.ts, config: {...}}`.', z.object({ plugins: pluginsSchema })),
  ];
  const defaultFormat = plugins.find((p) => p.contributes?.defaultDataFormat)?.contributes?.defaultDataFormat;
  const channelFields: Record<string, z.ZodType> = { ...channelBaseShape };
  for (const p of plugins) Object.assign(channelFields, p.contributes?.channelFields);
  if (defaultFormat) channelFields.data_format = channelBaseShape.data_format.default(defaultFormat);
  parts.push(table('channel_rest[]', 'REST channels: a URL path bound to a service.', z.object(channelFields)));
  const securityFields: z.ZodRawShape = {};
  for (const p of plugins) Object.assign(securityFields, p.contributes?.securityFields);
  for (const p of plugins) {
    for (const [type, shape] of Object.entries(p.contributes?.securityTypes ?? {})) {
      parts.push(table(`security[] of type ${type}`, `Provided by the \`${p.name}\` plugin.`, z.object({ ...securityBaseShape, ...shape })));
    }
  }
  parts.push(table('security[] (every type)', 'Keys every security definition also takes.', z.object(securityFields)));
  parts.push(table('tenants[]', 'Tenants: each with its services, its own resources under qualified names (`acme/orders`), its quotas and its trust level (docs/tenants.md).', tenantSchema));
  for (const p of plugins) {
    for (const [section, schema] of Object.entries(p.contributes?.sections ?? {})) {
      parts.push(table(section, `Provided by the \`${p.name}\` plugin.`, z.object({ [section]: schema as z.ZodType })));
    }
  }
  for (const p of plugins) {
    const options = rows(p.configSchema as z.ZodType);
    if (options.length) parts.push([`## plugins.${p.name}.config`, '', '| key | type | required | default | description |', '|---|---|---|---|---|', ...options, ''].join('\n'));
  }
  return parts.join('\n');
}

if (process.argv[1]?.endsWith('config-doc.ts')) {
  writeFileSync(new URL('../docs/configuration.md', import.meta.url), await configurationDoc());
}
