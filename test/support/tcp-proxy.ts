import net from 'node:net';
import { listenOnLoopback } from './listen.js';

/**
 * A TCP proxy in front of PostgreSQL that a test can break the way an outage does: `refuse`
 * closes every connection and refuses new ones (a stopped server), `freeze` keeps connections
 * open but forwards nothing (a server that stopped answering, SIGSTOP), `restore` goes back.
 */
export async function startTcpProxy(target: { host: string; port: number }) {
  let mode: 'up' | 'refuse' | 'freeze' = 'up';
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((client) => {
    if (mode === 'refuse') return client.destroy();
    const upstream = net.connect(target);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.on('data', (chunk) => mode === 'up' && upstream.write(chunk));
    upstream.on('data', (chunk) => mode === 'up' && client.write(chunk));
  });
  const port = await listenOnLoopback(server);
  return {
    port,
    refuse() {
      mode = 'refuse';
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
    },
    freeze() {
      mode = 'freeze';
    },
    restore() {
      // Connections that lived through a freeze carry half-forwarded traffic: end them as a restart would.
      if (mode === 'freeze') for (const [client, upstream] of pairs) (client.destroy(), upstream.destroy());
      mode = 'up';
    },
    async close() {
      for (const [client, upstream] of pairs) (client.destroy(), upstream.destroy());
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
