import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { formatCount } from '../../lib/display-count.js';
import type { FieldError } from '../../lib/errors.js';
import { EMPTY_INPUT, ruleCost } from './policy-cost.js';
import { DEFAULT_POOL_LIMITS, EvaluationPool, type PoolLimits, type PoolOutcome } from './policy-evaluation-pool.js';
import { literalPatterns, ruleProblem, runRules, type RuleInput, type RuleRun } from './policy-language.js';
import type { PolicyDocument, PolicyOutcome } from './policy-schemas.js';

/** What evaluation reads of a policy, or of its shadow. */
type Rules = Pick<PolicyDocument, 'rules' | 'defaultOutcome'>;

export type { RuleInput };

export interface PolicyVerdict {
  outcome: PolicyOutcome;
  /** Index of the rule that decided, or that failed; null when the default applied or no single rule can be named. */
  matchedRule: number | null;
  /** Why evaluation failed closed to `review`, recorded in the audit event. */
  error?: string;
}

const PLANS_BETWEEN_YIELDS = 200;

/** What may run of a policy for one input: see PolicyEvaluator.plan. */
interface Plan {
  runnable: string[];
  refusal: PolicyVerdict | null;
  cost: number;
}

export interface EvaluationLimits extends PoolLimits {
  /** Rules whose cost bound, together, stays within this many steps run inline: well under a millisecond. */
  inlineCostSteps: number;
  /** A rule whose cost bound for the input exceeds this many steps is not run: the request fails closed. */
  costBudgetSteps: number;
  /** Bulk evaluations go to a worker in batches whose cost bounds add up to at most this many steps. */
  bulkBatchSteps: number;
}

export const DEFAULT_EVALUATION_LIMITS: EvaluationLimits = {
  ...DEFAULT_POOL_LIMITS,
  inlineCostSteps: 100_000,
  costBudgetSteps: 10_000_000,
  bulkBatchSteps: 1_000_000,
};

/**
 * Evaluates policies within bounds (see docs/policies.md, "Bounds on evaluation"). Every rule's work
 * is bounded before it runs (policy-cost.ts): rules that are cheap for this input run inline, the
 * others on a worker thread under a hard time limit, and a rule over the budget does not run at
 * all. Whatever stops an evaluation fails closed to `review`, with the reason.
 */
export class PolicyEvaluator {
  private readonly pool: EvaluationPool;

  constructor(private readonly limits: EvaluationLimits = DEFAULT_EVALUATION_LIMITS) {
    this.pool = new EvaluationPool(limits);
  }

  /** First rule whose `when` is true decides; any evaluation error or bound fails closed to `review`. */
  async evaluate(document: Rules, input: RuleInput, fairnessKey: string): Promise<PolicyVerdict> {
    const plan = this.plan(document, input);
    let run: RuleRun;
    if (plan.cost <= this.limits.inlineCostSteps) {
      run = runRules(plan.runnable, input);
    } else {
      const outcome = await this.pool.run({ kind: 'run', expressions: plan.runnable, input }, fairnessKey);
      if (outcome.kind !== 'run') return stopped(outcome);
      run = outcome.run;
    }
    return verdictOf(document, plan, run);
  }

  /**
   * The same evaluation of many inputs, all on the pool's workers, for bulk work (a replay) whose
   * cheap evaluations, thousands together, would hold the event loop. Inputs go in batches whose
   * cost bounds add up to at most `bulkBatchSteps` (well within the time limit; an input over it
   * goes alone), at most one batch per worker at a time, so that another organization's
   * evaluations wait behind one batch at most. A batch stopped by the time limit is split and
   * tried again; an input stopped on its own fails closed.
   */
  async evaluateMany(document: Rules, inputs: RuleInput[], fairnessKey: string): Promise<PolicyVerdict[]> {
    const plans: Plan[] = [];
    for (const input of inputs) {
      plans.push(this.plan(document, input));
      // Bounding is cheap for one input but not for thousands: let other requests in between.
      if (plans.length % PLANS_BETWEEN_YIELDS === 0) await yieldToEventLoop();
    }
    const batches: number[][] = [];
    let batch: number[] = [];
    let batchCost = 0;
    for (const [index, plan] of plans.entries()) {
      if (batch.length > 0 && batchCost + plan.cost > this.limits.bulkBatchSteps) {
        batches.push(batch);
        batch = [];
        batchCost = 0;
      }
      batch.push(index);
      batchCost += plan.cost;
    }
    if (batch.length > 0) batches.push(batch);

    const verdicts: PolicyVerdict[] = new Array(inputs.length);
    const expressions = document.rules.map((rule) => rule.when);
    const settle = async (members: number[]): Promise<void> => {
      const items = members.map((index) => ({ input: inputs[index]!, rules: plans[index]!.runnable.length }));
      const outcome = await this.pool.run({ kind: 'runMany', expressions, items }, fairnessKey);
      if (outcome.kind === 'runMany') {
        for (const [position, index] of members.entries()) verdicts[index] = verdictOf(document, plans[index]!, outcome.runs[position]!);
      } else if (members.length === 1) {
        verdicts[members[0]!] = stopped(outcome);
      } else {
        // One costly input, or a machine too busy for the time limit, may stop a whole batch: its
        // halves are tried on their own, down to single inputs, which fail closed as evaluation does.
        const half = Math.ceil(members.length / 2);
        await settle(members.slice(0, half));
        await settle(members.slice(half));
      }
    };
    let next = 0;
    const runBatches = async () => {
      while (next < batches.length) await settle(batches[next++]!);
    };
    await Promise.all(Array.from({ length: this.limits.workers }, runBatches));
    return verdicts;
  }

  /** The rules that may run for this input (those before one over the budget), and their cost bound. */
  private plan(document: Rules, input: RuleInput): Plan {
    const expressions = document.rules.map((rule) => rule.when);
    let cost = 0;
    for (const [index, expression] of expressions.entries()) {
      const ruleSteps = boundOf(expression, input);
      if (ruleSteps > this.limits.costBudgetSteps) {
        const reason = `its cost bound for this input (${formatSteps(ruleSteps)} steps) exceeds the budget of ${formatSteps(this.limits.costBudgetSteps)}`;
        return { runnable: expressions.slice(0, index), refusal: failed(index, reason), cost };
      }
      cost += ruleSteps;
    }
    return { runnable: expressions, refusal: null, cost };
  }

  /**
   * Checks every rule the way it will run: it must compile (policy-language.ts), its patterns must
   * be RE2, and it must be able to run within the budget for some input. Patterns are compiled on
   * a worker, since a large repetition can take seconds.
   */
  async check(document: Rules, fairnessKey: string): Promise<FieldError[]> {
    const problems = await Promise.all(document.rules.map((rule) => this.ruleProblem(rule.when, fairnessKey)));
    return problems.flatMap((problem, index) => (problem ? [{ path: `rules.${index}.when`, message: `Rule ${index} ${problem}` }] : []));
  }

  private async ruleProblem(expression: string, fairnessKey: string): Promise<string | null> {
    const structural = ruleProblem(expression);
    if (structural) return structural;
    const leastSteps = ruleCost(expression, EMPTY_INPUT);
    if (leastSteps > this.limits.costBudgetSteps) {
      return `can never run within the evaluation budget: even for an empty payload its cost bound is ${formatSteps(leastSteps)} steps, above the budget of ${formatSteps(this.limits.costBudgetSteps)}`;
    }
    const patterns = literalPatterns(expression);
    if (patterns.length === 0) return null;
    const outcome = await this.pool.run({ kind: 'patterns', patterns }, fairnessKey);
    if (outcome.kind !== 'patterns') return `has a pattern that cannot be compiled within the limits: compiling ${reasonOf(outcome)}`;
    return outcome.problems.find((problem) => problem !== null) ?? null;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

function boundOf(expression: string, input: RuleInput): number {
  try {
    return ruleCost(expression, input);
  } catch {
    // It no longer parses; running it reports why.
    return 0;
  }
}

/** Why the pool gave no answer of the kind asked for (a worker answers each task with its own kind). */
function reasonOf(outcome: PoolOutcome): string {
  return outcome.kind === 'stopped' ? outcome.reason : `got an answer of the wrong kind (${outcome.kind})`;
}

function verdictOf(document: Rules, plan: Plan, run: RuleRun): PolicyVerdict {
  if ('failedRule' in run) return failed(run.failedRule, run.error);
  if (run.matchedRule !== null) return { outcome: document.rules[run.matchedRule]!.outcome, matchedRule: run.matchedRule };
  return plan.refusal ?? { outcome: document.defaultOutcome, matchedRule: null };
}

function stopped(outcome: PoolOutcome): PolicyVerdict {
  return { outcome: 'review', matchedRule: null, error: `rules: evaluation ${reasonOf(outcome)}` };
}

function failed(index: number, error: string): PolicyVerdict {
  return { outcome: 'review', matchedRule: index, error: `rules.${index}.when: ${error}` };
}

function formatSteps(steps: number): string {
  return Number.isFinite(steps) ? formatCount(Math.round(steps)) : 'unbounded';
}

/** The evaluator of this process: the API's creations and the expiry worker's escalations share it. */
const evaluator = new PolicyEvaluator();

/** First rule whose `when` is true decides; anything that stops evaluation fails closed to `review`. */
export function evaluatePolicy(document: Rules, input: RuleInput, fairnessKey: string): Promise<PolicyVerdict> {
  return evaluator.evaluate(document, input, fairnessKey);
}

/** Many evaluations on the pool's workers, for bulk work (see PolicyEvaluator.evaluateMany). */
export function evaluatePolicies(document: Rules, inputs: RuleInput[], fairnessKey: string): Promise<PolicyVerdict[]> {
  return evaluator.evaluateMany(document, inputs, fairnessKey);
}

/** Field errors for every rule that cannot be stored (422 at PUT). */
export function checkPolicyRules(document: Rules, fairnessKey: string): Promise<FieldError[]> {
  return evaluator.check(document, fairnessKey);
}
