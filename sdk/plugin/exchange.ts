import type { Logger } from 'pino';
import type { Channel } from './config.ts';
import type { AuthInfo } from './extensions.ts';
import type { TraceContext } from '../internal/invoke-request.ts';

/** One uploaded file part (multipart channels). */
export interface UploadedFile {
  field: string;
  filename: string;
  contentType: string;
  content: Buffer;
}

/** What the service produced, before a format plugin serializes it. */
export interface ResponseDraft {
  status: number;
  headers: Record<string, string>;
  /** Object, array, string, Buffer (bytes) or undefined. After serialize: string or Buffer. */
  body: unknown;
  contentType: string | undefined;
}

/**
 * One request passing through a channel's hook chain. Plugins read and write it;
 * the kernel turns it into the HTTP response.
 */
export interface Exchange {
  readonly cid: string;
  readonly channel: Channel;
  /** Upper-case HTTP method. */
  readonly method: string;
  /** URL path without the query string. */
  readonly path: string;
  /** Request headers, names lower-cased. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Keeps a request header (a credential a security plugin checked) out of what the service sees. */
  hideHeader(name: string): void;
  /** Request headers as the service sees them: hidden ones left out, repeated ones joined with ', '. */
  visibleHeaders(): Record<string, string>;
  /** The socket's peer address. */
  readonly remoteAddress: string;
  /** The client address after the forwarded-header rules (spec: rate limiting item 6, server.trusted_proxies). */
  readonly clientAddress: string;
  readonly pathParams: Record<string, string>;
  readonly query: Record<string, string | string[]>;
  /** Reads the whole body once (later calls return the same bytes); 413 past the channel's limit. */
  readBody(): Promise<Buffer>;
  /** The body bytes once read, for signature checks. */
  rawBody: Buffer | undefined;
  /** The parsed document as a whole (JSON value, XML tree, HL7 message, form fields). */
  payload: unknown;
  /** Files of a multipart body. */
  files: UploadedFile[] | undefined;
  /** Service input: path, query and payload fields merged by the channel's priority settings. */
  input: Record<string, unknown>;
  auth: AuthInfo | undefined;
  /**
   * The request's trace context, set by a tracing plugin at onRequest (SDK 1.1). The kernel carries
   * it into the invoke request (so into host calls and queued events) and into `log`'s lines.
   */
  trace?: TraceContext | undefined;
  response: ResponseDraft;
  /** True once a reply was sent or the connection dropped: the chain stops. */
  readonly replied: boolean;
  /** True when drop() closed the connection: no response went out, whatever `response.status` says (optional: SDK 1.0 exchanges lack it). */
  readonly dropped?: boolean;
  /** Milliseconds since the request arrived, from Fastify's own timer (no hook needed); stops once the response is written (SDK 1.1). */
  readonly elapsedMs?: number;
  /** Sends a reply now (body: object → JSON, string, Buffer); the chain stops. */
  reply(status: number, body: unknown, headers?: Record<string, string>): void;
  /** Closes the TCP connection with a reset and writes no response at all. */
  drop(): void;
  /**
   * Calls done(true) once the response left the process (handed to the socket), or done(false)
   * if the connection failed first. Register before replying.
   */
  onSent(done: (written: boolean) => void): void;
  readonly log: Logger;
}
