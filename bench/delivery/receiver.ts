// The webhook receiver of bench/delivery.ts, a child process of its own so that it does not share
// a thread with the load generator. Every POST is answered 204 as soon as its body is in, and
// recorded: arrival time (wall clock, sub-ms), path, event id (`id`), `data.approvalId`, `type`.
//
//   GET  /_bench/count     {"received", "unique" (by path + event id), "unparsable"}
//   GET  /_bench/records   [[arrivedAtMs, path, eventId, approvalId, type], ...] since the last reset
//   POST /_bench/reset     forget everything
import http from 'node:http';
import { performance } from 'node:perf_hooks';

type DeliveryRecord = [arrivedAtMs: number, path: string, eventId: string, approvalId: string, type: string];

const port = Number(process.env.PORT);
let records: DeliveryRecord[] = [];
let unique = new Set<string>();
let unparsable = 0;

function control(req: http.IncomingMessage, res: http.ServerResponse, path: string): void {
  const reply = (body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  };
  req.resume();
  if (path === '/_bench/count') return reply({ received: records.length, unique: unique.size, unparsable });
  if (path === '/_bench/records') return reply(records);
  if (path === '/_bench/reset' && req.method === 'POST') {
    records = [];
    unique = new Set();
    unparsable = 0;
    return reply({ ok: true });
  }
  res.writeHead(404).end();
}

const server = http.createServer((req, res) => {
  const arrivedAt = performance.timeOrigin + performance.now();
  const path = req.url ?? '/';
  if (path.startsWith('/_bench/')) return control(req, res, path);
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    res.writeHead(204).end();
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { id?: unknown; type?: unknown; data?: { approvalId?: unknown } };
      const eventId = String(body.id ?? '');
      records.push([arrivedAt, path, eventId, String(body.data?.approvalId ?? ''), String(body.type ?? '')]);
      unique.add(`${path}|${eventId}`);
    } catch {
      unparsable++;
    }
  });
});

server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
