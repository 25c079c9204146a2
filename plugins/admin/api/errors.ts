import type { ConfigIssue } from '../../../sdk/plugin/index.ts';

export { IssuesError } from '../../../sdk/plugin/index.ts';

/** A config issue as the admin API reports it: the path in the whole config, and the resource it falls in. */
export interface ResourceIssue extends ConfigIssue {
  section?: string;
  name?: string;
  /** The path inside that resource's entry. */
  field?: (string | number)[];
}
