import { SvcError, type ConfigIssue, type ErrorCode } from '../../../sdk/plugin/index.ts';

/** A config issue as the admin API reports it: the path in the whole config, and the resource it falls in. */
export interface ResourceIssue extends ConfigIssue {
  section?: string;
  name?: string;
  /** The path inside that resource's entry. */
  field?: (string | number)[];
}

/** An error whose body also lists issues (a refused config, refused arguments). */
export class IssuesError extends SvcError {
  constructor(
    code: ErrorCode,
    details: string,
    readonly issues: ResourceIssue[],
  ) {
    super(code, details);
  }
}
