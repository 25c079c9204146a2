import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configurationDoc } from '../../scripts/config-doc.ts';

describe('docs/configuration.md', () => {
  it('is generated from the current schemas (run npm run docs)', async () => {
    expect(readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8')).toBe(await configurationDoc());
  });
});
