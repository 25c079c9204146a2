/**
 * The kernel's import point for the one error catalogue, which is declared in the plugin SDK
 * (sdk/plugin/errors.ts) because plugins throw and shape the same errors.
 */
export { ERRORS, IssuesError, SvcError, errorBody, type ErrorCode, type FieldIssue } from '../sdk/plugin/errors.ts';
