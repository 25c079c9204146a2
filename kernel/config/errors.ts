import type { ConfigIssue } from '../../sdk/plugin/contract.ts';

/** A config that cannot be used: every problem found, each as `path: message` (and as data in `details` when known). */
export class ConfigError extends Error {
  constructor(
    readonly issues: string[],
    readonly details: ConfigIssue[] = issues.map((message) => ({ path: [], message })),
  ) {
    super(issues.join('\n'));
    this.name = 'ConfigError';
  }
}
