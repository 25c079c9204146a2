import { createServer, connect, type Socket } from 'node:net';

/** Two connected sockets over loopback TCP. */
export async function socketpair(): Promise<[Socket, Socket]> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const client = connect(port, '127.0.0.1');
  const other = await accepted;
  server.close();
  return [other, client];
}
