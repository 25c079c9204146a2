import { connect, createServer, type AddressInfo } from 'node:net';

/**
 * A loopback port that refuses connections, and keeps refusing them while the tests run. A port
 * taken with listen(0) and freed again can be handed to another test file's server running in
 * parallel, which then accepts the "dead" connection (seen in CI). Port 1 (tcpmux) is outside the
 * range listen(0) hands out and nothing listens there on a test machine; it is checked, and only
 * if something answers there does this fall back to a freed port.
 */
export async function refusedPort(): Promise<number> {
  if (await refuses(1)) return 1;
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(false)));
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}
