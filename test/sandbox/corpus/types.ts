/**
 * The shape of a corpus case: one service file, one request, the outcome the hardened kernel
 * must give. test/sandbox/corpus.test.ts deploys every case and runs it; README.md lists them.
 */
export interface CorpusRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Defaults to the case's channel, `/<file name without extension>`. */
  url?: string;
  payload?: unknown;
  headers?: Record<string, string>;
}

/** What the runner hands to checks besides the parsed body. */
export interface CorpusResponse {
  status: number;
  /** Header names lower-cased; a header sent twice has an array value. */
  headers: Record<string, string | string[] | undefined>;
  /** Raw header lines as written on the wire (socket transport only). */
  rawHeaderLines?: string[];
  body: string;
  ms: number;
}

export interface Expectation {
  status: number | number[];
  /** The error body's `details` (error statuses only). */
  details?: string | RegExp;
  /** Throws (vitest `expect`) when the body is wrong; `json` is undefined when the body is not JSON. */
  bodyCheck?(json: any, res: CorpusResponse): void;
  /** The answer must come within this many ms (hangs are failures anyway, see the runner's cap). */
  withinMs?: number;
}

export interface CorpusCase {
  name: string;
  /** What the checks beyond status and details demand, in words (README.md). */
  note?: string;
  /** Service file; the channel and the service are named after it (without extension). */
  file: string;
  code: string;
  request?: CorpusRequest;
  /**
   * 'socket' sends the request over a real TCP connection and reads the raw bytes, for cases
   * where headers must be seen as Node writes them. Default 'inject'.
   */
  transport?: 'inject' | 'socket';
  /** Deploy cases: the file is written while the server runs (hot deploy) instead of at startup. */
  hotDeploy?: {
    /** The deploy must be refused with an error matching this. */
    error: RegExp;
    /** ...within this many ms of the file being written. */
    withinMs: number;
  };
  /** Another request sent just before this case's, e.g. a victim whose result must not be forged. */
  alongside?: { request: CorpusRequest; leadMs?: number; expect: Expectation };
  expect: Expectation & {
    /** At most this many log lines carry the request's CID (host calls must not log one line each). */
    maxLogLines?: number;
    /** Once the call's time limit has passed, its sandbox process must be idle (no work outlives the call). */
    idleAfter?: boolean;
    /** A second request to the same channel after the first answered (e.g. with ?phase=2). */
    next?: { request?: CorpusRequest; delayMs?: number; expect: Expectation };
  };
}

export type Theme = 'escapes' | 'limits' | 'crashes' | 'output' | 'thenables' | 'tampering' | 'hostcalls' | 'deploy';

/** Limits every corpus service declares unless it says otherwise. */
export const LIMITS = 'limits: { timeoutMs: 500, memoryMb: 32 }';
export const TIMEOUT_MS = 500;

/** A service with one generic handler; `body` is its code, `prelude` goes before the definition. */
export function svc(body: string, opts: { prelude?: string; sync?: boolean; limits?: string } = {}): string {
  return [
    "import { service, publish, hmacSha256Hex, verifyHmacSha256Hex, NotFound } from 'svc/sdk';",
    opts.prelude ?? '',
    `export default service({ ${opts.limits ?? LIMITS}, ${opts.sync ? '' : 'async '}handle(ctx) {`,
    body,
    '} });',
    '',
  ].join('\n');
}

export const TIME_LIMIT = 'Service exceeded its time limit';
export const MEMORY_LIMIT = 'Service exceeded its memory limit';
export const CRASHED = 'Service sandbox crashed and was restarted';
export const SERVICE_FAILED = 'Service raised an exception';
/** svc's own 500 for output it refused: the generic message, or one that names the header or status. */
/** SERVICE_OUTPUT_INVALID: the details name what is wrong (docs/errors.md). */
export const OUTPUT_REFUSED = /^Invalid service output: .*(header|status|content type)/i;
/** SERVICE_OUTPUT_INVALID for a value the runtime cannot serialize. */
export const NOT_SERIALIZABLE = /^Service output is not serializable: /;
/** A value services try to put in X-Svc-CID; the runner fails any response that carries it. */
export const FORGED = 'forged-by-service';
