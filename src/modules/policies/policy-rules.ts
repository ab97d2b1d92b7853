import type { FieldError } from '../../lib/errors.js';
import { EMPTY_INPUT, ruleCost } from './policy-cost.js';
import { DEFAULT_POOL_LIMITS, EvaluationPool, type PoolLimits, type PoolOutcome } from './policy-evaluation-pool.js';
import { literalPatterns, ruleProblem, runRules, type RuleInput, type RuleRun } from './policy-language.js';
import type { PolicyDocument, PolicyOutcome } from './policy-schemas.js';

export type { RuleInput };

export interface PolicyVerdict {
  outcome: PolicyOutcome;
  /** Index of the rule that decided, or that failed; null when the default applied or no single rule can be named. */
  matchedRule: number | null;
  /** Why evaluation failed closed to `review`, recorded in the audit event. */
  error?: string;
}

export interface EvaluationLimits extends PoolLimits {
  /** Rules whose cost bound, together, stays within this many steps run inline: well under a millisecond. */
  inlineCostSteps: number;
  /** A rule whose cost bound for the input exceeds this many steps is not run: the request fails closed. */
  costBudgetSteps: number;
}

export const DEFAULT_EVALUATION_LIMITS: EvaluationLimits = {
  ...DEFAULT_POOL_LIMITS,
  inlineCostSteps: 100_000,
  costBudgetSteps: 10_000_000,
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
  async evaluate(document: PolicyDocument, input: RuleInput, fairnessKey: string): Promise<PolicyVerdict> {
    const expressions = document.rules.map((rule) => rule.when);
    let runnable = expressions;
    let refusal: PolicyVerdict | null = null;
    let cost = 0;
    for (const [index, expression] of expressions.entries()) {
      const ruleSteps = boundOf(expression, input);
      if (ruleSteps > this.limits.costBudgetSteps) {
        runnable = expressions.slice(0, index);
        refusal = failed(
          index,
          `its cost bound for this input (${formatSteps(ruleSteps)} steps) exceeds the budget of ${formatSteps(this.limits.costBudgetSteps)}`,
        );
        break;
      }
      cost += ruleSteps;
    }

    let run: RuleRun;
    if (cost <= this.limits.inlineCostSteps) {
      run = runRules(runnable, input);
    } else {
      const outcome = await this.pool.run({ kind: 'run', expressions: runnable, input }, fairnessKey);
      if (outcome.kind !== 'run') return { outcome: 'review', matchedRule: null, error: `rules: evaluation ${reasonOf(outcome)}` };
      run = outcome.run;
    }
    if ('failedRule' in run) return failed(run.failedRule, run.error);
    if (run.matchedRule !== null) return { outcome: document.rules[run.matchedRule]!.outcome, matchedRule: run.matchedRule };
    return refusal ?? { outcome: document.defaultOutcome, matchedRule: null };
  }

  /**
   * Checks every rule the way it will run: it must compile (policy-language.ts), its patterns must
   * be RE2, and it must be able to run within the budget for some input. Patterns are compiled on
   * a worker, since a large repetition can take seconds.
   */
  async check(document: PolicyDocument, fairnessKey: string): Promise<FieldError[]> {
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

function failed(index: number, error: string): PolicyVerdict {
  return { outcome: 'review', matchedRule: index, error: `rules.${index}.when: ${error}` };
}

function formatSteps(steps: number): string {
  return Number.isFinite(steps) ? Math.round(steps).toLocaleString('en-US') : 'unbounded';
}

/** The evaluator of this process: the API's creations and the expiry worker's escalations share it. */
const evaluator = new PolicyEvaluator();

/** First rule whose `when` is true decides; anything that stops evaluation fails closed to `review`. */
export function evaluatePolicy(document: PolicyDocument, input: RuleInput, fairnessKey: string): Promise<PolicyVerdict> {
  return evaluator.evaluate(document, input, fairnessKey);
}

/** Field errors for every rule that cannot be stored (422 at PUT). */
export function checkPolicyRules(document: PolicyDocument, fairnessKey: string): Promise<FieldError[]> {
  return evaluator.check(document, fairnessKey);
}
