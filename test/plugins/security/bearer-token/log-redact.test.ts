import pino from 'pino';
import { expect, it } from 'vitest';
import { logRedactPaths } from '../../../../kernel/plugin.ts';
import bearerTokenPlugin from '../../../../plugins/security/bearer-token/plugin.ts';

it('the client secret and access tokens are censored wherever a log object carries them', () => {
  const lines: string[] = [];
  const log = pino({ redact: { paths: logRedactPaths([bearerTokenPlugin]), censor: '[redacted]' } }, { write: (l: string) => void lines.push(l) });
  log.warn({ client_secret: 's1', access_token: 't1', definition: { client_secret: 's2', username: 'app-1' }, response: { access_token: 't2', expires_in: 60 } }, 'x');
  const line = JSON.parse(lines[0]!) as Record<string, any>;
  expect(line.client_secret).toBe('[redacted]');
  expect(line.access_token).toBe('[redacted]');
  expect(line.definition).toEqual({ client_secret: '[redacted]', username: 'app-1' });
  expect(line.response).toEqual({ access_token: '[redacted]', expires_in: 60 });
});
