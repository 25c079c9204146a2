import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { md4 } from '../../../../plugins/security/ntlm/md4.ts';

/**
 * An HTTP server behind NTLM, written from MS-NLMP as a Windows server would check it, and
 * independent of the client under test except for MD4 (which has its own RFC 1320 vectors).
 * A NEGOTIATE is answered with a CHALLENGE (a random server challenge and target info); an
 * AUTHENTICATE's NTLMv2 response is recomputed from the account's NT hash, and its MIC checked.
 * A verified socket is authenticated: later requests on it are served without a handshake;
 * requests on any other socket get 401 `WWW-Authenticate: NTLM`.
 */

const SIGNATURE = Buffer.from('NTLMSSP\0', 'latin1');
const AV_NB_COMPUTER = 1;
const AV_NB_DOMAIN = 2;
const AV_DNS_DOMAIN = 4;
const AV_FLAGS = 6;
const AV_TIMESTAMP = 7;

export interface Account {
  user: string;
  domain: string;
  password: string;
}

/** What the server saw of one request: who it was served as, and what it carried. */
export interface Served {
  socket: number;
  method: string;
  url: string;
  user: string;
  domain: string;
  body: string;
  contentType: string | undefined;
}

export interface NtlmServerOptions {
  accounts: Account[];
  /** Send MsvAvTimestamp (the client must then zero LMv2 and send a MIC). Default true. */
  timestamp?: boolean;
  /** Delay before answering an authenticated request, in ms. */
  delayMs?: number;
  /** Answer the nth served request (1-based) with `Connection: close`. */
  closeAfter?: number;
}

interface SocketState {
  id: number;
  negotiate?: Buffer;
  challenge?: Buffer;
  serverChallenge?: Buffer;
  timestamp?: Buffer;
  who?: { user: string; domain: string };
}

export interface NtlmServer {
  url: string;
  /** NEGOTIATE messages answered. */
  handshakes: number;
  /** AUTHENTICATE messages that verified. */
  verified: number;
  /** AUTHENTICATE messages that did not. */
  refused: number;
  /** MICs checked and found right. */
  mics: number;
  /** TCP connections accepted. */
  sockets: number;
  served: Served[];
  /** Forget every socket's authentication (as a server restart would, without closing sockets). */
  forget(): void;
  /** Destroy the socket of the next request that arrives without an NTLM header, without answering it. */
  dropNextRequest(): void;
  /** Requests dropped that way. */
  dropped: number;
  /** Close every open socket now. */
  dropSockets(): Promise<void>;
  close(): Promise<void>;
}

function hmacMd5(key: Buffer, ...parts: Buffer[]): Buffer {
  const h = createHmac('md5', key);
  for (const p of parts) h.update(p);
  return h.digest();
}

function avPair(id: number, value: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt16LE(id, 0);
  header.writeUInt16LE(value.length, 2);
  return Buffer.concat([header, value]);
}

function readAvPairs(data: Buffer): Map<number, Buffer> {
  const pairs = new Map<number, Buffer>();
  for (let at = 0; at + 4 <= data.length; ) {
    const id = data.readUInt16LE(at);
    const length = data.readUInt16LE(at + 2);
    if (id === 0) break;
    pairs.set(id, data.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return pairs;
}

function field(message: Buffer, at: number): Buffer {
  const length = message.readUInt16LE(at);
  const offset = message.readUInt32LE(at + 4);
  return message.subarray(offset, offset + length);
}

function challengeMessage(serverChallenge: Buffer, targetInfo: Buffer): Buffer {
  const targetName = Buffer.from('SERVER', 'utf16le');
  const head = Buffer.alloc(48);
  SIGNATURE.copy(head, 0);
  head.writeUInt32LE(2, 8);
  head.writeUInt16LE(targetName.length, 12);
  head.writeUInt16LE(targetName.length, 14);
  head.writeUInt32LE(48, 16);
  head.writeUInt32LE(0xe28a8235, 20); // Unicode, NTLM, extended session security, target info...
  serverChallenge.copy(head, 24);
  head.writeUInt16LE(targetInfo.length, 40);
  head.writeUInt16LE(targetInfo.length, 42);
  head.writeUInt32LE(48 + targetName.length, 44);
  return Buffer.concat([head, targetName, targetInfo]);
}

export async function startNtlmServer(options: NtlmServerOptions): Promise<NtlmServer> {
  const states = new WeakMap<Socket, SocketState>();
  const open = new Set<Socket>();
  let authenticated = new WeakSet<Socket>();
  let dropNext = false;
  const ntHashes = new Map(options.accounts.map((a) => [a.user.toUpperCase(), { ...a, ntHash: md4(Buffer.from(a.password, 'utf16le')) }]));

  const stats: NtlmServer = {
    url: '',
    handshakes: 0,
    verified: 0,
    refused: 0,
    mics: 0,
    sockets: 0,
    served: [],
    forget: () => void (authenticated = new WeakSet()),
    dropNextRequest: () => void (dropNext = true),
    dropped: 0,
    dropSockets: async () => {
      const closing = [...open].map((s) => new Promise((r) => s.once('close', r)));
      for (const s of open) s.destroy();
      await Promise.all(closing);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };

  function refuse(res: ServerResponse): void {
    res.writeHead(401, { 'www-authenticate': 'NTLM', 'content-type': 'text/plain' }).end('Unauthorized');
  }

  function answerNegotiate(state: SocketState, negotiate: Buffer, res: ServerResponse): void {
    stats.handshakes++;
    const serverChallenge = randomBytes(8);
    const timestamp = Buffer.alloc(8);
    timestamp.writeBigUInt64LE((BigInt(Date.now()) + 11_644_473_600_000n) * 10_000n);
    const pairs = [
      avPair(AV_NB_DOMAIN, Buffer.from('DOMAIN', 'utf16le')),
      avPair(AV_NB_COMPUTER, Buffer.from('SERVER', 'utf16le')),
      avPair(AV_DNS_DOMAIN, Buffer.from('domain.test', 'utf16le')),
      ...(options.timestamp === false ? [] : [avPair(AV_TIMESTAMP, timestamp)]),
      avPair(0, Buffer.alloc(0)),
    ];
    const challenge = challengeMessage(serverChallenge, Buffer.concat(pairs));
    Object.assign(state, { negotiate, challenge, serverChallenge, timestamp: options.timestamp === false ? undefined : timestamp, who: undefined });
    res.writeHead(401, { 'www-authenticate': `NTLM ${challenge.toString('base64')}` }).end();
  }

  /** MS-NLMP 3.3.2 and 3.2.5.1.2, from the server's side. */
  function verifyAuthenticate(state: SocketState, message: Buffer): { user: string; domain: string } | undefined {
    if (state.serverChallenge === undefined || state.challenge === undefined || state.negotiate === undefined) return undefined;
    const lm = field(message, 12);
    const nt = field(message, 20);
    const domain = field(message, 28).toString('utf16le');
    const user = field(message, 36).toString('utf16le');
    const account = ntHashes.get(user.toUpperCase());
    if (account === undefined || account.domain.toUpperCase() !== domain.toUpperCase() || nt.length < 48) return undefined;
    const responseKey = hmacMd5(account.ntHash, Buffer.from(user.toUpperCase() + domain, 'utf16le'));
    const proof = nt.subarray(0, 16);
    const blob = nt.subarray(16);
    if (!timingSafeEqual(proof, hmacMd5(responseKey, state.serverChallenge, blob))) return undefined;
    if (blob[0] !== 1 || blob[1] !== 1) return undefined;
    const pairs = readAvPairs(blob.subarray(28));
    if (pairs.get(AV_NB_DOMAIN)?.toString('utf16le') !== 'DOMAIN') return undefined;
    if (state.timestamp !== undefined) {
      // The client echoes the server's time, zeroes LMv2 and signs the three messages.
      if (!blob.subarray(8, 16).equals(state.timestamp) || !lm.equals(Buffer.alloc(24))) return undefined;
      const flags = pairs.get(AV_FLAGS);
      if (flags === undefined || (flags.readUInt32LE(0) & 2) === 0) return undefined;
      const sessionBaseKey = hmacMd5(responseKey, proof);
      const zeroed = Buffer.from(message);
      zeroed.fill(0, 72, 88);
      if (!timingSafeEqual(message.subarray(72, 88), hmacMd5(sessionBaseKey, state.negotiate, state.challenge, zeroed))) return undefined;
      stats.mics++;
    } else {
      const clientChallenge = blob.subarray(16, 24);
      if (!lm.equals(Buffer.concat([hmacMd5(responseKey, state.serverChallenge, clientChallenge), clientChallenge]))) return undefined;
    }
    return { user, domain };
  }

  async function serve(state: SocketState, req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
    stats.served.push({
      socket: state.id,
      method: req.method ?? '',
      url: req.url ?? '',
      user: state.who?.user ?? '',
      domain: state.who?.domain ?? '',
      body: body.toString('utf8'),
      contentType: req.headers['content-type'],
    });
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (options.closeAfter === stats.served.length) headers.connection = 'close';
    if (!res.destroyed) res.writeHead(200, headers).end(JSON.stringify({ ok: true, user: state.who?.user, n: stats.served.length }));
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const socket = req.socket;
      const state = states.get(socket)!;
      const body = Buffer.concat(chunks);
      const match = /^NTLM ([A-Za-z0-9+/=]+)$/.exec(req.headers.authorization ?? '');
      if (match === null) {
        if (dropNext) {
          dropNext = false;
          stats.dropped++;
          socket.destroy();
        } else if (authenticated.has(socket)) void serve(state, req, res, body);
        else refuse(res);
        return;
      }
      const message = Buffer.from(match[1]!, 'base64');
      const type = message.length >= 12 && message.subarray(0, 8).equals(SIGNATURE) ? message.readUInt32LE(8) : 0;
      if (type === 1) return answerNegotiate(state, message, res);
      const who = type === 3 ? verifyAuthenticate(state, message) : undefined;
      state.serverChallenge = undefined; // one AUTHENTICATE per CHALLENGE
      if (who === undefined) {
        stats.refused++;
        authenticated.delete(socket);
        return refuse(res);
      }
      stats.verified++;
      state.who = who;
      authenticated.add(socket);
      void serve(state, req, res, body);
    });
  });
  server.on('connection', (socket: Socket) => {
    stats.sockets++;
    states.set(socket, { id: stats.sockets });
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stats.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return stats;
}
