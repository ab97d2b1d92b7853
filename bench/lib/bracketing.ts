import type { Measurement } from './load.js';

export interface Bracketed<M> {
  /** The ceiling's measurements in the order taken: one before the first scenario, one after each. */
  ceilings: M[];
  /** Per scenario, in order: its measurement and its ratio to the mean of the ceilings around it. */
  scenarios: { measured: M; ratio: number }[];
}

/**
 * Measures each scenario between two measurements of the ceiling and compares it with their mean.
 * This machine's speed drifts within a run (the ceiling moved by a third between measurements a
 * minute apart), so a ceiling taken once at the start is minutes away from the last scenario. The
 * ceiling measured between two scenarios serves both: n scenarios take n + 1 ceilings.
 */
export async function measureBracketed<S, M extends Pick<Measurement, 'rps'>>(
  scenarios: readonly S[],
  measureCeiling: () => Promise<M>,
  measureScenario: (scenario: S, index: number) => Promise<M>,
): Promise<Bracketed<M>> {
  const ceilings = [await measureCeiling()];
  const measuredScenarios: Bracketed<M>['scenarios'] = [];
  for (const [index, scenario] of scenarios.entries()) {
    const measured = await measureScenario(scenario, index);
    const before = ceilings.at(-1)!;
    const after = await measureCeiling();
    ceilings.push(after);
    measuredScenarios.push({ measured, ratio: measured.rps / ((before.rps + after.rps) / 2) });
  }
  return { ceilings, scenarios: measuredScenarios };
}
