import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Channel } from '../config/schema.ts';
import type { Exchange, ResponseDraft, UploadedFile } from '../../sdk/plugin/exchange.ts';
import type { AuthInfo } from '../../sdk/plugin/extensions.ts';
import type { TraceContext } from '../../sdk/internal/invoke-request.ts';
import { SvcError } from '../errors.ts';
import { clientAddressOf, type PeerFilter } from './client-address.ts';
import { lingerAfterRefusal } from '../platform/linger.ts';

/** The Exchange of one HTTP request. */
export class HttpExchange implements Exchange {
  readonly cid: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly remoteAddress: string;
  rawBody: Buffer | undefined = undefined;
  payload: unknown = undefined;
  files: UploadedFile[] | undefined = undefined;
  input: Record<string, unknown> = {};
  auth: AuthInfo | undefined = undefined;
  trace: TraceContext | undefined = undefined;
  readonly response: ResponseDraft = { status: 200, headers: {}, body: undefined, contentType: undefined };
  replied = false;
  /** When the chain step it awaits is past its time (StepWatch); Infinity while that step bounds itself. */
  stepUntil = Infinity;
  /** Its place in the StepWatch while a step of it is watched; -1 otherwise. */
  watchIndex = -1;
  /** The connection was dropped on purpose (firewall): no reply is owed. */
  dropped = false;
  /** Answered with a refusal that is not a 429 but is paused as one (server.refusal_pause_ms): a quarantined service's 503. */
  refusal = false;
  private clientAddr: string | undefined;
  private hidden: Set<string> | undefined;
  private logger: Logger | undefined;
  private reading: Promise<Buffer> | undefined;

  constructor(
    readonly request: FastifyRequest,
    readonly replyTo: FastifyReply,
    readonly channel: Channel,
    readonly pathParams: Record<string, string>,
    readonly query: Record<string, string | string[]>,
    path: string,
    private readonly bodyLimit: number,
    private readonly trusted: PeerFilter | undefined,
    /** True once shutdown began: the answer then closes its connection, so draining ends. */
    readonly closing: () => boolean = () => false,
  ) {
    this.cid = request.id;
    this.method = request.method;
    this.path = path;
    this.headers = request.headers;
    this.remoteAddress = request.socket.remoteAddress ?? '';
  }

  hideHeader(name: string): void {
    (this.hidden ??= new Set()).add(name.toLowerCase());
  }

  visibleHeaders(): Record<string, string> {
    const out: Record<string, string> = {};
    const hidden = this.hidden;
    for (const name in this.headers) {
      if (hidden?.has(name)) continue;
      const value = this.headers[name];
      out[name] = Array.isArray(value) ? value.join(', ') : (value ?? '');
    }
    return out;
  }

  get log(): Logger {
    const t = this.trace?.traceparent;
    return (this.logger ??= (this.request.log as unknown as Logger).child(t ? { cid: this.cid, trace_id: t.slice(3, 35), span_id: t.slice(36, 52) } : { cid: this.cid }));
  }

  get elapsedMs(): number {
    return this.replyTo.elapsedTime;
  }

  get clientAddress(): string {
    return (this.clientAddr ??= clientAddressOf(this.headers, this.remoteAddress, this.trusted));
  }

  readBody(): Promise<Buffer> {
    return (this.reading ??= this.collect());
  }

  private collect(): Promise<Buffer> {
    const limit = this.bodyLimit;
    const length = this.headers['content-length'];
    // No length and no chunked encoding: HTTP says there is no body; skip the stream machinery.
    if ((length === undefined || length === '0') && this.headers['transfer-encoding'] === undefined) return Promise.resolve((this.rawBody = EMPTY));
    if (Number(length) > limit) return Promise.reject(this.tooLarge());
    const request = this.request.raw;
    if (this.allBuffered(request, length)) return this.takeBuffered(request, limit);
    // A small body usually arrives in the same read as its headers, and Node's parser hands it to
    // the stream just after the request's first steps ran: look again once that is done.
    return Promise.resolve().then(() => (this.allBuffered(request, length) ? this.takeBuffered(request, limit) : this.listen(request, limit)));
  }

  /** Every byte of a body of known length is in the stream's buffer, and nothing else reads the stream. */
  private allBuffered(request: FastifyRequest['raw'], length: string | string[] | undefined): boolean {
    if (request.readableFlowing !== null || request.destroyed) return false;
    return request.complete || (typeof length === 'string' && Number.isSafeInteger(Number(length)) && request.readableLength >= Number(length));
  }

  private listen(request: FastifyRequest['raw'], limit: number): Promise<Buffer> {
    // Destroyed while this step waited (client gone, malformed body): its 'close' may be past.
    if (request.destroyed) return Promise.reject(closedEarly());
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      // Listeners, not for-await: leaving a for-await loop destroys the request and with it the
      // socket, so the 413 would never reach the client.
      const onData = (chunk: Buffer) => {
        size += chunk.length;
        if (size <= limit) {
          chunks.push(chunk);
          return;
        }
        chunks.length = 0;
        reject(this.tooLarge());
        request.off('data', onData);
      };
      request.on('data', onData);
      request.on('error', reject);
      request.once('end', () => {
        if (size > limit) return;
        this.rawBody = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
        resolve(this.rawBody);
      });
      request.once('close', () => {
        if (!request.complete) reject(closedEarly());
      });
    });
  }

  /** Takes a body the stream already holds: without listeners, events or closures per request. */
  private takeBuffered(request: FastifyRequest['raw'], limit: number): Promise<Buffer> {
    const body = (request.read() as Buffer | null) ?? EMPTY;
    return body.length > limit ? Promise.reject(this.tooLarge()) : Promise.resolve((this.rawBody = body));
  }

  private tooLarge(): SvcError {
    lingerAfterRefusal(this.request.raw);
    return new SvcError('PAYLOAD_TOO_LARGE', `Request body exceeds ${this.bodyLimit} bytes`, { headers: { connection: 'close' } });
  }

  reply(status: number, body: unknown, headers?: Record<string, string>): void {
    if (this.replied) return;
    this.response.status = status;
    this.response.body = body;
    if (headers) Object.assign(this.response.headers, headers);
    sendDraft(this);
  }

  onSent(done: (written: boolean) => void): void {
    const raw = this.replyTo.raw;
    // A pipelined response queued behind another never sees 'close' when the connection dies: watch the socket too.
    const socket = this.request.raw.socket;
    let settled = false;
    const settle = (written: boolean) => {
      if (settled) return;
      settled = true;
      raw.off('finish', onFinish);
      raw.off('close', onClose);
      socket.off('close', onClose);
      done(written);
    };
    const onFinish = () => settle(true);
    const onClose = () => settle(raw.writableFinished);
    raw.on('finish', onFinish);
    raw.on('close', onClose);
    socket.on('close', onClose);
    if (raw.destroyed || socket.destroyed) settle(false);
  }

  drop(): void {
    if (this.replied) return;
    this.replied = true;
    this.dropped = true;
    this.replyTo.hijack();
    const socket = this.request.socket;
    // A reset, not a FIN: the client learns nothing, not even that an HTTP server is here.
    if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
    else socket.destroy();
  }
}

const EMPTY = Buffer.alloc(0);

const closedEarly = (): Error => Object.assign(new Error('The client closed the connection before the body was complete'), { code: 'ECONNRESET' });


const EMPTY_BODY_STATUSES = new Set([204, 304]);

/** Writes the response draft: status, headers, and a body unless the status or method forbids one. */
export function sendDraft(ex: HttpExchange): void {
  const r = ex.response;
  // Checked before the reply counts as sent, so the chain's error path still answers (500 with the CID).
  if (!Number.isInteger(r.status) || r.status < 100 || r.status > 599) throw new SvcError('INTERNAL', undefined, { cause: new Error(`invalid status ${String(r.status)}`) });
  ex.replied = true;
  const reply = ex.replyTo;
  reply.code(r.status);
  for (const name in r.headers) reply.header(name, r.headers[name]);
  if (ex.closing()) reply.header('connection', 'close');
  let body = r.body;
  if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) {
    body = JSON.stringify(body);
    if (!r.contentType) r.contentType = 'application/json; charset=utf-8';
  }
  if (r.contentType) reply.type(r.contentType);
  else if (typeof body === 'string') reply.type('text/plain; charset=utf-8');
  if (EMPTY_BODY_STATUSES.has(r.status) || ex.method === 'HEAD' || body === undefined) reply.send();
  else reply.send(body);
}
