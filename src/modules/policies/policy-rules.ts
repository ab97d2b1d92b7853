import { Environment } from '@marcbachmann/cel-js';
import type { FieldError } from '../../lib/errors.js';
import type { PolicyDocument, PolicyOutcome } from './policy-schemas.js';

/** The variables a rule can read (contract C4). */
export interface RuleInput {
  action: string;
  payload: Record<string, unknown>;
  agent: string | null;
  context: Record<string, unknown> | null;
}

export interface PolicyVerdict {
  outcome: PolicyOutcome;
  /** Index of the rule that decided, or that failed; null when the default applied. */
  matchedRule: number | null;
  /** Why evaluation failed closed to `review`, recorded in the audit event. */
  error?: string;
}

const celEnvironment = new Environment({ homogeneousAggregateLiterals: false })
  .registerVariable('action', 'string')
  .registerVariable('payload', 'map')
  .registerVariable('agent', 'dyn')
  .registerVariable('context', 'dyn');

type CompiledRule = ReturnType<typeof celEnvironment.parse>;

/**
 * Parsed expressions by source text. Parsing is pure, so sharing it between requests and
 * organizations is safe; the bound keeps a flood of distinct expressions from growing memory.
 */
const compiledRules = new Map<string, CompiledRule>();
const COMPILED_RULES_LIMIT = 10_000;

function compileRule(expression: string): CompiledRule {
  let compiled = compiledRules.get(expression);
  if (!compiled) {
    compiled = celEnvironment.parse(expression);
    if (compiledRules.size >= COMPILED_RULES_LIMIT) compiledRules.clear();
    compiledRules.set(expression, compiled);
  }
  return compiled;
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!.trim();
}

/**
 * Checks every rule's expression the way it will run: it must parse, type-check, and be able to
 * return a boolean (`dyn` is accepted, since map fields are only known at evaluation).
 */
export function checkPolicyRules(document: PolicyDocument): FieldError[] {
  return document.rules.flatMap((rule, index) => {
    const path = `rules.${index}.when`;
    const result = celEnvironment.check(rule.when);
    if (!result.valid) {
      return [{ path, message: `Rule ${index} does not compile: ${firstLine(result.error)}` }];
    }
    if (result.type !== 'bool' && result.type !== 'dyn') {
      return [{ path, message: `Rule ${index} must return a boolean, not ${result.type}` }];
    }
    return [];
  });
}

/** First rule whose `when` is true decides; any evaluation error fails closed to `review`. */
export function evaluatePolicy(document: PolicyDocument, input: RuleInput): PolicyVerdict {
  for (const [index, rule] of document.rules.entries()) {
    let result: unknown;
    try {
      result = compileRule(rule.when)(input);
    } catch (error) {
      return { outcome: 'review', matchedRule: index, error: `rules.${index}.when: ${firstLine(error)}` };
    }
    if (typeof result !== 'boolean') {
      return { outcome: 'review', matchedRule: index, error: `rules.${index}.when returned ${typeof result}, not a boolean` };
    }
    if (result) return { outcome: rule.outcome, matchedRule: index };
  }
  return { outcome: document.defaultOutcome, matchedRule: null };
}
