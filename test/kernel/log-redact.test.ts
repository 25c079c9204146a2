import pino from 'pino';
import { expect, it } from 'vitest';
import { findBundledPluginFiles, loadPlugins } from '../../kernel/plugin-loader.ts';
import { logRedactPaths } from '../../kernel/plugin.ts';

function logged(paths: string[], obj: object): Record<string, any> {
  const lines: string[] = [];
  const log = pino({ redact: { paths, censor: '[redacted]' } }, { write: (l: string) => void lines.push(l) });
  log.info(obj, 'x');
  return JSON.parse(lines[0]!) as Record<string, any>;
}

it('credential headers are redacted by the security plugins that read them; the kernel names none', async () => {
  const all = (await loadPlugins({}, process.cwd(), findBundledPluginFiles())).map((l) => l.plugin);
  const line = logged(logRedactPaths(all), { headers: { authorization: 'Basic c2VjcmV0', 'x-api-key': 'k-123', accept: '*/*' }, req: { authorization: 'Bearer t' }, definition: { password: 'p' }, ok: 1 });
  expect(line.headers).toEqual({ authorization: '[redacted]', 'x-api-key': '[redacted]', accept: '*/*' });
  expect(line.req.authorization).toBe('[redacted]');
  expect(line.definition.password).toBe('[redacted]');
  expect(line.ok).toBe(1);
  // Without plugins only the generic secret names remain: no header is known to the kernel.
  expect(logRedactPaths([]).some((p) => /authorization|api-key/i.test(p))).toBe(false);
});
