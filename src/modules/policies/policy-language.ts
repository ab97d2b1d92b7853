import { Environment, type ASTNode } from '@marcbachmann/cel-js';
import { RE2JS } from 're2js';

/**
 * The CEL dialect of policy rules: the variables of docs/policies.md, and `matches` with RE2 semantics
 * as the CEL specification prescribes. Shared by the API process, which evaluates cheap rules
 * inline, and the evaluation worker threads, which run the rest under a time limit.
 */

/** The variables a rule can read (see docs/policies.md). */
export interface RuleInput {
  action: string;
  payload: Record<string, unknown>;
  agent: string | null;
  context: Record<string, unknown> | null;
}

/** What running rules in order gave: the first rule that held, or the first that failed. */
export type RuleRun = { matchedRule: number | null } | { failedRule: number; error: string };

/** Comprehensions (`all`, `exists`, `exists_one`, `map`, `filter`) inside each other, at most. */
const MAX_COMPREHENSION_NESTING = 2;

const COMPREHENSION_MACROS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

const MAX_CACHED = 10_000;
/** Longer keys are not cached: 10,000 of them could hold gigabytes. Rules are at most 4,096 characters. */
const MAX_CACHED_KEY_LENGTH = 4_096;

/** A cache that forgets everything when full: bounded memory under a flood of distinct keys. */
function boundedCache<V>(create: (key: string) => V): (key: string) => V {
  const entries = new Map<string, V>();
  return (key) => {
    let value = entries.get(key);
    if (value === undefined) {
      value = create(key);
      if (key.length > MAX_CACHED_KEY_LENGTH) return value;
      if (entries.size >= MAX_CACHED) entries.clear();
      entries.set(key, value);
    }
    return value;
  };
}

/**
 * Compiled RE2 programs by pattern; a pattern RE2 refuses is cached as its error message.
 * Compiling takes time linear in the program, which repetition counts can make 1,000 times the
 * pattern, long enough to hold the event loop, so it only happens during evaluation, which
 * is bounded, or in an evaluation worker.
 */
const compileRegex = boundedCache((pattern: string): RE2JS | string => {
  try {
    return RE2JS.compile(pattern);
  } catch (error) {
    return firstLine(error);
  }
});

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!.trim();
}

/** Type names the checker gives the receiver and argument of `matches` that can hold a string. */
const STRING_OR_DYN = new Set(['string', 'dyn']);

const celEnvironment = new Environment({ homogeneousAggregateLiterals: false })
  .registerVariable('action', 'string')
  .registerVariable('payload', 'map')
  .registerVariable('agent', 'dyn')
  .registerVariable('context', 'dyn')
  // cel-js runs `matches` with the backtracking RegExp of JavaScript, whose time can be
  // exponential in the input. A macro takes precedence over the built-in overload for every
  // `<receiver>.matches(<pattern>)` call at parse time (the parser does not know types, so the
  // receiver type in this signature only keeps it apart from the built-in one), and runs RE2,
  // which is linear in the input.
  .registerFunction('bytes.matches(ast): bool', ({ receiver, args }: { receiver: ASTNode; args: ASTNode[] }) => ({
    typeCheck(checker: MacroChecker, _macro: unknown, ctx: unknown) {
      const receiverType = checker.check(receiver, ctx);
      const patternType = checker.check(args[0]!, ctx);
      if (!STRING_OR_DYN.has(receiverType.name) || !STRING_OR_DYN.has(patternType.name)) {
        throw checker.createError(
          'no_matching_overload',
          `found no matching overload for '${receiverType.name}.matches(${patternType.name})'`,
          receiver,
        );
      }
      return checker.getType('bool');
    },
    evaluate(evaluator: MacroEvaluator, _macro: unknown, ctx: unknown) {
      const text = evaluator.run(receiver, ctx);
      const pattern = evaluator.run(args[0]!, ctx);
      if (typeof text !== 'string' || typeof pattern !== 'string') {
        throw new Error(`matches needs a string and a string pattern, not ${typeof text} and ${typeof pattern}`);
      }
      const regex = compileRegex(pattern);
      if (typeof regex === 'string') throw new Error(`invalid regular expression '${pattern}': ${regex}`);
      return regex.test(text);
    },
  }));

interface MacroChecker {
  check(node: ASTNode, ctx: unknown): { name: string };
  getType(name: string): unknown;
  createError(code: string, message: string, node: ASTNode): Error;
}

interface MacroEvaluator {
  run(node: ASTNode, ctx: unknown): unknown;
}

type CompiledRule = ReturnType<typeof celEnvironment.parse>;

/** Parsed expressions by source text; parsing is pure, so sharing across organizations is safe. */
export const compileRule = boundedCache((expression: string): CompiledRule => celEnvironment.parse(expression));

/** Runs rules in order until one holds; an error or a non-boolean result stops the run. */
export function runRules(expressions: readonly string[], input: RuleInput): RuleRun {
  for (const [index, expression] of expressions.entries()) {
    let result: unknown;
    try {
      result = compileRule(expression)(input);
    } catch (error) {
      return { failedRule: index, error: firstLine(error) };
    }
    if (typeof result !== 'boolean') return { failedRule: index, error: `returned ${typeof result}, not a boolean` };
    if (result) return { matchedRule: index };
  }
  return { matchedRule: null };
}

/**
 * Why an expression cannot be stored, or null: it must parse, type-check, be able to return a
 * boolean (`dyn` is accepted, since map fields are only known at evaluation), and nest
 * comprehensions at most MAX_COMPREHENSION_NESTING deep. Its literal patterns are checked apart
 * (see patternProblem), since compiling them can take long.
 */
export function ruleProblem(expression: string): string | null {
  const result = celEnvironment.check(expression);
  if (!result.valid) return `does not compile: ${firstLine(result.error)}`;
  if (result.type !== 'bool' && result.type !== 'dyn') return `must return a boolean, not ${result.type}`;
  const nesting = comprehensionNesting(compileRule(expression).ast);
  if (nesting > MAX_COMPREHENSION_NESTING) {
    return `nests comprehensions ${nesting} deep; at most ${MAX_COMPREHENSION_NESTING} are allowed, as the work grows with the product of the list sizes`;
  }
  return null;
}

/** Why a `matches` pattern can never match anything, or null. */
export function patternProblem(pattern: string): string | null {
  const regex = compileRegex(pattern);
  return typeof regex === 'string' ? `has a pattern that is not valid RE2 syntax (${JSON.stringify(pattern)}): ${regex}` : null;
}

/** The child expressions of a node, whatever its kind. */
export function childrenOf(node: ASTNode): ASTNode[] {
  const args = node.args as unknown;
  if (node.op === 'value' || node.op === 'id') return [];
  if (node.op === '.' || node.op === '.?') return [(args as [ASTNode, string])[0]];
  if (node.op === 'call') return (args as [string, ASTNode[]])[1];
  if (node.op === 'rcall') return [(args as [string, ASTNode, ASTNode[]])[1], ...(args as [string, ASTNode, ASTNode[]])[2]];
  if (node.op === 'map') return (args as [ASTNode, ASTNode][]).flat();
  if (node.op === '!_' || node.op === '-_') return [args as ASTNode];
  return args as ASTNode[];
}

/** A comprehension call: `<list>.all(x, <predicate>)` and the like, with the iteration variable. */
export function asComprehension(node: ASTNode): { name: string; receiver: ASTNode; variable: string; bodies: ASTNode[] } | null {
  if (node.op !== 'rcall') return null;
  const [name, receiver, args] = node.args as [string, ASTNode, ASTNode[]];
  const [variable, ...bodies] = args;
  if (!COMPREHENSION_MACROS.has(name) || variable?.op !== 'id' || bodies.length < 1) return null;
  return { name, receiver, variable: variable.args as string, bodies };
}

function comprehensionNesting(node: ASTNode): number {
  const comprehension = asComprehension(node);
  if (!comprehension) return Math.max(0, ...childrenOf(node).map(comprehensionNesting));
  return Math.max(comprehensionNesting(comprehension.receiver), 1 + Math.max(0, ...comprehension.bodies.map(comprehensionNesting)));
}

/** The literal patterns of the `matches` calls of a parsed expression. */
export function literalPatterns(expression: string): string[] {
  const patterns: string[] = [];
  const visit = (node: ASTNode): void => {
    if (node.op === 'rcall') {
      const [name, , args] = node.args as [string, ASTNode, ASTNode[]];
      const pattern = args[0];
      if (name === 'matches' && args.length === 1 && pattern?.op === 'value' && typeof pattern.args === 'string')
        patterns.push(pattern.args);
    }
    childrenOf(node).forEach(visit);
  };
  visit(compileRule(expression).ast);
  return patterns;
}
