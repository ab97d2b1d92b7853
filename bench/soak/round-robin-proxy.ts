// The load balancer in front of the web processes: each new TCP connection goes to the next
// backend in turn, or to the one after it when that one refuses (a web process restarting).
import net from 'node:net';
import { once } from 'node:events';

export interface RoundRobinProxy {
  port: number;
  /** The backend port a client connection (named by the client's local port) was piped to. */
  backendOf(clientPort: number): number | undefined;
  close(): Promise<void>;
}

export async function startRoundRobinProxy(port: number, backends: number[]): Promise<RoundRobinProxy> {
  let next = 0;
  const sockets = new Set<net.Socket>();
  const backendByClientPort = new Map<number, number>();
  const connect = (client: net.Socket, tries: number) => {
    const backendPort = backends[next++ % backends.length]!;
    const upstream = net.connect(backendPort, '127.0.0.1');
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      backendByClientPort.set(client.remotePort!, backendPort);
      upstream.once('close', () => client.destroy());
      client.once('close', () => upstream.destroy());
      client.pipe(upstream).pipe(client);
      client.resume();
    });
    upstream.on('error', () => {
      if (!connected && tries > 1) connect(client, tries - 1);
      else client.destroy();
    });
  };
  const server = net.createServer({ pauseOnConnect: true }, (client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => {});
    connect(client, backends.length);
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return {
    port,
    backendOf: (clientPort) => backendByClientPort.get(clientPort),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
