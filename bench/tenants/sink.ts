/**
 * The stand-in for the outgoing connection's far end, a child process of the tenants suite
 * (bench/suites/tenants.ts): answers every call at once. A process of its own, at the lowest
 * priority, like the attack clients: on this one machine it stands in for a server elsewhere, and
 * should take from the server under test only the cores the server leaves idle.
 * IPC: sends `{ ready: true, port }` once it listens.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send!({ ready: true, port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
