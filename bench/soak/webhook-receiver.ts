// The soak's webhook receiver: the tests' receiver (test/support/webhook-receiver.ts), counting
// every delivery by event id (body `id`) with the delivery ids it came under
// (`x-service-webhook-id`), and refusing one request in `failEvery` with a 503, so that retries
// are part of the mix.
import { startReceiver } from '../../test/support/webhook-receiver.js';

export interface WebhookReceiver {
  url: string;
  /** event id → the delivery ids it arrived under (one, unless the service sent it twice under different ids). */
  deliveries: Map<string, Set<string>>;
  /** Requests answered 2xx, retries of one event included, and those refused on purpose. */
  accepted: number;
  refused: number;
  close(): Promise<void>;
}

export async function startWebhookReceiver(failEvery: number): Promise<WebhookReceiver> {
  const server = await startReceiver();
  const receiver: WebhookReceiver = {
    url: server.url('/hooks'),
    deliveries: new Map(),
    accepted: 0,
    refused: 0,
    close: () => server.close(),
  };
  server.respond('/hooks', (delivery, n) => {
    if (n % failEvery === 0) {
      receiver.refused++;
      return { status: 503 };
    }
    const ids = receiver.deliveries.get(delivery.body.id) ?? new Set<string>();
    ids.add(String(delivery.headers['x-service-webhook-id']));
    receiver.deliveries.set(delivery.body.id, ids);
    receiver.accepted++;
    return { status: 204 };
  });
  return receiver;
}
