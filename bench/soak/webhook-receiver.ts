// The soak's webhook receiver: records every delivery by event id (body `id`) with the delivery
// ids it came under (`x-service-webhook-id`), and refuses one request in `failEvery` with a 503,
// so that retries are part of the mix.
import http from 'node:http';
import { once } from 'node:events';

export interface WebhookReceiver {
  url: string;
  /** event id → the delivery ids it arrived under (one, unless the service sent it twice under different ids). */
  deliveries: Map<string, Set<string>>;
  /** Requests answered 2xx, retries of one event included, and those refused on purpose. */
  accepted: number;
  refused: number;
  close(): Promise<void>;
}

export async function startWebhookReceiver(port: number, failEvery: number): Promise<WebhookReceiver> {
  let requests = 0;
  const receiver: WebhookReceiver = {
    url: `http://127.0.0.1:${port}/hooks`,
    deliveries: new Map(),
    accepted: 0,
    refused: 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (++requests % failEvery === 0) {
        receiver.refused++;
        res.writeHead(503).end();
        return;
      }
      const eventId = String((JSON.parse(Buffer.concat(chunks).toString()) as { id?: unknown }).id);
      const deliveryId = String(req.headers['x-service-webhook-id']);
      const ids = receiver.deliveries.get(eventId) ?? new Set<string>();
      ids.add(deliveryId);
      receiver.deliveries.set(eventId, ids);
      receiver.accepted++;
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 1000;
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return receiver;
}
