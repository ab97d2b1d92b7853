import { describe, expect, it } from 'vitest';
import { measureBracketed } from '../bench/lib/bracketing.js';

/** Measurements that take their figures from a list, in turn, and record the order they ran in. */
function scripted(ceilingRps: number[], scenarioRps: Record<string, number>) {
  const order: string[] = [];
  return {
    order,
    measureCeiling: async () => {
      order.push('ceiling');
      return { rps: ceilingRps.shift()! };
    },
    measureScenario: async (name: string, index: number) => {
      order.push(`${name}#${index}`);
      return { rps: scenarioRps[name]! };
    },
  };
}

describe('bench: scenarios bracketed by the ceiling', () => {
  it('measures the ceiling before the first scenario and after each, once between two scenarios', async () => {
    const run = scripted([100, 200, 50, 80], { a: 30, b: 25, c: 13 });
    const { ceilings } = await measureBracketed(['a', 'b', 'c'], run.measureCeiling, run.measureScenario);
    expect(run.order).toEqual(['ceiling', 'a#0', 'ceiling', 'b#1', 'ceiling', 'c#2', 'ceiling']);
    expect(ceilings.map((ceiling) => ceiling.rps)).toEqual([100, 200, 50, 80]);
  });

  it("compares each scenario with the mean of the ceilings just before and just after it, as the machine's speed drifts", async () => {
    // A ceiling taken once at the start would give 30%, 25%, 13%; the one after each, 15%, 50%, 16.25%.
    const run = scripted([100, 200, 50, 80], { a: 30, b: 25, c: 13 });
    const { scenarios } = await measureBracketed(['a', 'b', 'c'], run.measureCeiling, run.measureScenario);
    expect(scenarios.map(({ measured, ratio }) => [measured.rps, ratio])).toEqual([
      [30, 0.2],
      [25, 0.2],
      [13, 0.2],
    ]);
  });

  it('with no scenario, measures the ceiling once', async () => {
    const run = scripted([100], {});
    expect(await measureBracketed([], run.measureCeiling, run.measureScenario)).toEqual({ ceilings: [{ rps: 100 }], scenarios: [] });
  });

  it('stops at a scenario that fails, with its error', async () => {
    const run = scripted([100, 200], { a: 30 });
    const failing = async (name: string, index: number) => {
      if (name === 'b') throw new Error('b: no pending approvals to decide');
      return run.measureScenario(name, index);
    };
    await expect(measureBracketed(['a', 'b', 'c'], run.measureCeiling, failing)).rejects.toThrow('b: no pending approvals');
    expect(run.order).toEqual(['ceiling', 'a#0', 'ceiling']);
  });
});
