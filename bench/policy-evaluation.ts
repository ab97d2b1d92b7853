// What moving an evaluation off the event loop costs: the same cheap rule evaluated inline and on
// the worker pool, one at a time and 50 at once, with the main thread's CPU time per evaluation.
//
//   npm run bench:policy-evaluation            5,000 evaluations per case
//   BENCH_EVALUATIONS=20000 npm run bench:policy-evaluation
import { DEFAULT_EVALUATION_LIMITS, PolicyEvaluator } from '../src/modules/policies/policy-rules.js';
import { policyDocumentSchema } from '../src/modules/policies/policy-schemas.js';
import { mapConcurrent } from './lib/concurrency.js';
import { formatTable, percentile, round } from './lib/figures.js';
import { envNumber, log } from './lib/run.js';

const EVALUATIONS = Math.round(envNumber('BENCH_EVALUATIONS', 5_000));
const document = policyDocumentSchema.parse({
  rules: [{ when: 'payload.amount <= 100.0 && action.startsWith("refund")', outcome: 'allow' }],
});
const input = { action: 'refund', payload: { amount: 5, currency: 'EUR' }, agent: null, context: null };

async function measure(name: string, evaluator: PolicyEvaluator, concurrency: number) {
  await mapConcurrent(Array.from({ length: 200 }), concurrency, () => evaluator.evaluate(document, input, 'org')); // warm-up
  const latencies: number[] = [];
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await mapConcurrent(Array.from({ length: EVALUATIONS }), concurrency, async () => {
    const begin = performance.now();
    const verdict = await evaluator.evaluate(document, input, 'org');
    if (verdict.outcome !== 'allow') throw new Error(`unexpected verdict ${JSON.stringify(verdict)}`);
    latencies.push(performance.now() - begin);
  });
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const row = {
    case: name,
    perSecond: round(EVALUATIONS / seconds, 0),
    p50Us: round(percentile(latencies, 50) * 1000, 0),
    p99Us: round(percentile(latencies, 99) * 1000, 0),
    // Main thread and worker threads together: process.cpuUsage counts every thread of the process.
    cpuUsPerEvaluation: round((cpu.user + cpu.system) / EVALUATIONS, 1),
  };
  log(JSON.stringify(row));
  return row;
}

const inline = new PolicyEvaluator(DEFAULT_EVALUATION_LIMITS);
const pooled = new PolicyEvaluator({ ...DEFAULT_EVALUATION_LIMITS, inlineCostSteps: 0 });
const rows = [
  await measure('inline, one at a time', inline, 1),
  await measure('inline, 50 at once', inline, 50),
  await measure('worker pool, one at a time', pooled, 1),
  await measure('worker pool, 50 at once', pooled, 50),
];
await Promise.all([inline.close(), pooled.close()]);
console.log(
  formatTable(
    ['case', 'evaluations/s', 'p50 µs', 'p99 µs', 'CPU µs per evaluation'],
    rows.map((row) => [row.case, row.perSecond, row.p50Us, row.p99Us, row.cpuUsPerEvaluation]),
  ),
);
console.log(JSON.stringify({ benchmark: 'policy-evaluation', evaluations: EVALUATIONS, rows }));
