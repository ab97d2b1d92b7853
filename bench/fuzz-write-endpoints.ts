// The property test of test/write-endpoints.property.test.ts, run long: FUZZ_RUNS generated
// hostile bodies per write endpoint (default 20,000, against 300 in `npm test`). Prints how many
// cases ran and how long they took; exits non-zero with fast-check's counterexample on a failure.
//
//   npm run bench:fuzz
//   FUZZ_RUNS=100000 npm run bench:fuzz
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { round } from './lib/figures.js';
import { PROJECT_ROOT } from './lib/processes.js';
import { envNumber, log } from './lib/run.js';

const RUNS = Math.round(envNumber('FUZZ_RUNS', 20_000));

log(`${RUNS} cases per endpoint (a quarter of that for the member, key and session group)`);
const started = performance.now();
const vitest = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', 'test/write-endpoints.property.test.ts'], {
  cwd: PROJECT_ROOT,
  env: { ...process.env, FUZZ_RUNS: String(RUNS) },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const [code] = (await once(vitest, 'exit')) as [number | null];
const seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify({ benchmark: 'fuzz', passed: code === 0, casesPerEndpoint: RUNS, seconds: round(seconds) }));
process.exitCode = code ?? 1;
