import http from 'node:http';
import { listenOnLoopback } from './listen.js';

export interface ReceivedDelivery {
  path: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  body: { id: string; type: string; createdAt: string; data: Record<string, unknown> };
  receivedAt: number;
}

/** What a path answers to its n-th request (1-based); 'hang' never answers. */
export type Responder = (
  delivery: ReceivedDelivery,
  n: number,
) => { status: number; headers?: Record<string, string>; body?: string } | 'hang';

/** A real HTTP server standing in for a customer's webhook endpoint. */
export async function startReceiver() {
  const received: ReceivedDelivery[] = [];
  const responders = new Map<string, Responder>();
  const counts = new Map<string, number>();
  const hanging = new Set<http.ServerResponse>();

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '/';
    const delivery = { path, headers: req.headers, rawBody, body: JSON.parse(rawBody), receivedAt: Date.now() };
    received.push(delivery);
    const n = (counts.get(path) ?? 0) + 1;
    counts.set(path, n);
    const respond: Responder = responders.get(path) ?? (() => ({ status: 204 }));
    const answer = respond(delivery, n);
    if (answer === 'hang') {
      hanging.add(res);
      return;
    }
    res.writeHead(answer.status, answer.headers).end(answer.body);
  });
  const base = `http://127.0.0.1:${await listenOnLoopback(server)}`;

  return {
    received,
    url: (path: string) => `${base}${path}`,
    respond(path: string, responder: Responder) {
      responders.set(path, responder);
    },
    at: (path: string) => received.filter((delivery) => delivery.path === path),
    async waitFor(predicate: (deliveries: ReceivedDelivery[]) => boolean, timeoutMs = 10_000): Promise<ReceivedDelivery[]> {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(received)) {
        if (Date.now() > deadline) throw new Error(`receiver: condition not met in ${timeoutMs} ms (${received.length} received)`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return received;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
