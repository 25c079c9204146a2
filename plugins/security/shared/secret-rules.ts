import type { z } from 'zod';

/**
 * What a secret may look like. Checked where secrets enter (config, CLI) and, for the
 * length, on presented credentials too: an oversized value is refused before any KDF runs.
 */
export const MAX_SECRET_LENGTH = 1024;
export const MAX_USERNAME_LENGTH = 256;

// RFC 7617: user-id and password are text without control characters.
const CONTROL = /[\u0000-\u001f\u007f]/;
// The key travels unmodified in X-API-Key. A comma cannot be allowed: a client sending the
// header twice reaches us as "k1, k2", which must read as several credentials, not one key.
const API_KEY = /^[\u0021-\u002b\u002d-\u007e]+$/;

export function passwordProblem(password: string): string | undefined {
  if (password.length === 0) return 'must not be empty';
  if (password.length > MAX_SECRET_LENGTH) return `must be at most ${MAX_SECRET_LENGTH} characters`;
  if (CONTROL.test(password)) return 'must not contain control characters';
  return undefined;
}

export function usernameProblem(username: string): string | undefined {
  if (username.length === 0) return 'must not be empty';
  if (username.length > MAX_USERNAME_LENGTH) return `must be at most ${MAX_USERNAME_LENGTH} characters`;
  if (username.includes(':')) return "must not contain ':' (Basic Auth splits at the first colon)";
  if (CONTROL.test(username)) return 'must not contain control characters';
  return undefined;
}

export function apiKeyProblem(key: string): string | undefined {
  if (key.length === 0) return 'must not be empty';
  if (key.length > MAX_SECRET_LENGTH) return `must be at most ${MAX_SECRET_LENGTH} characters`;
  if (!API_KEY.test(key)) return 'must be printable ASCII without spaces or commas';
  return undefined;
}

/** A problem function as a zod superRefine step, so config and CLI share one rule. */
export function asRefinement(problem: (value: string) => string | undefined) {
  return (value: string, ctx: z.core.$RefinementCtx<string>): void => {
    const message = problem(value);
    if (message !== undefined) ctx.addIssue({ code: 'custom', message });
  };
}
