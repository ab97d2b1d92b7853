import http from 'node:http';
import { HOST } from './fixtures.js';

export interface SteadyCreations {
  port: number;
  key: string;
  policyKey: string;
  /** Creations per second. */
  rate: number;
}

/**
 * Creations at a steady rate (open loop: each sent when due, whatever the earlier ones are doing),
 * each one's latency recorded; a creation the policy allows answers 200, the only status counted.
 */
export async function steadyCreations(
  { port, key, policyKey, rate }: SteadyCreations,
  durationS: number,
): Promise<{ latencies: number[]; failures: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const body = JSON.stringify({ action: 'refund', payload: { amount: 5, currency: 'EUR' }, policyKey });
  const latencies: number[] = [];
  let failures = 0;
  const inFlight: Promise<void>[] = [];
  const send = () =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      const request = http.request(
        {
          host: HOST,
          port,
          method: 'POST',
          path: '/v1/approvals',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${key}` },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) latencies.push(performance.now() - started);
            else failures++;
            resolve();
          });
        },
      );
      request.on('error', () => {
        failures++;
        resolve();
      });
      request.end(body);
    });
  const total = Math.round(durationS * rate);
  const startedAt = performance.now();
  for (let sent = 0; sent < total; sent++) {
    const due = startedAt + (sent * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    inFlight.push(send());
  }
  await Promise.all(inFlight);
  agent.destroy();
  return { latencies, failures };
}
