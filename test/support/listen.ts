import { createServer, type AddressInfo, type Server } from 'node:net';
import { listen } from '../../src/lib/listen.js';

/** Starts `server` on a port of 127.0.0.1 that the system picks, and returns that port once it listens. */
export async function listenOnLoopback(server: Server): Promise<number> {
  await listen(server, 0, '127.0.0.1');
  return (server.address() as AddressInfo).port;
}

/** A port of 127.0.0.1 that was free a moment ago: for a process the test starts, which listens on it itself. */
export async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listenOnLoopback(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}
