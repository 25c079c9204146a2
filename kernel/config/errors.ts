/** A config that cannot be used: every problem found, each as `path: message`. */
export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(issues.join('\n'));
    this.name = 'ConfigError';
  }
}
