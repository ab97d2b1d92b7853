// The web process exactly as the Procfile runs it (dist/src/server.js), with its event-loop
// delay recorded by monitorEventLoopDelay. On SIGUSR2 it writes the figures since the previous
// signal to LOOP_DELAY_FILE as JSON, and starts over. Used by bench/policy-isolation.ts.
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const reportFile = process.env.LOOP_DELAY_FILE;
if (!reportFile) throw new Error('LOOP_DELAY_FILE is required');

const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();
const ms = (nanoseconds: number) => Math.round(nanoseconds / 10_000) / 100;
process.on('SIGUSR2', () => {
  writeFileSync(
    reportFile,
    JSON.stringify({
      p50Ms: ms(histogram.percentile(50)),
      p99Ms: ms(histogram.percentile(99)),
      maxMs: ms(histogram.max),
      samples: histogram.count,
    }),
  );
  histogram.reset();
});

await import(new URL('../dist/src/server.js', import.meta.url).href);
