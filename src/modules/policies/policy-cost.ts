import type { ASTNode } from '@marcbachmann/cel-js';
import { asComprehension, childrenOf, compileRule, type RuleInput } from './policy-language.js';

/**
 * An upper bound on the work of evaluating one rule against one input, in steps (about one AST
 * node visit, one character compared or copied, or one element iterated). Computed from the
 * expression and the sizes of the values it reads, before running it: every value is described by
 * the largest string, list or map length anywhere inside it (`size`) and by how many elements and
 * characters it holds in all (`total`). Values read through fixed paths (`payload.items`) are
 * measured exactly; anything computed is bounded from what it was computed from.
 *
 * The bound is sound for every function this dialect offers: a function it does not know costs
 * Infinity, so an unknown construct can never be judged cheap. It is monotone in the input
 * (a larger input never gives a smaller bound), which is what lets a rule whose bound exceeds
 * the budget for the empty input be refused when it is saved.
 */

interface Bound {
  size: number;
  total: number;
  /** The exact value, when it is read from the input through a fixed path or is a literal. */
  known?: { value: unknown };
}

interface Estimate extends Bound {
  cost: number;
}

const SCALAR: Bound = { size: 0, total: 1 };

/** Functions whose work does not depend on their arguments' sizes (timestamp and duration parts, size, at). */
const CONSTANT_FUNCTIONS = new Set([
  'size',
  'at',
  'getDate',
  'getDayOfMonth',
  'getDayOfWeek',
  'getDayOfYear',
  'getFullYear',
  'getHours',
  'getMilliseconds',
  'getMinutes',
  'getMonth',
  'getSeconds',
]);
/** Work of a timestamp or time-zone conversion, which goes through Intl. */
const TIME_FUNCTION_STEPS = 100;
/** Conversions (`string(x)`, `int(s)`, `timestamp(s)`…): linear in the argument, a short string out. */
const CONVERSIONS = new Set(['string', 'int', 'uint', 'double', 'bool', 'bytes', 'timestamp', 'duration', 'type']);
const SHORT_STRING = 32;
/**
 * RE2 programs: at most about two instructions per pattern character, each copied as often as
 * the counted repetitions (`{n}`, `{n,m}`) around it say; RE2 refuses more than 1,000 copies,
 * nested ones included. Compiling costs about 50 steps per instruction.
 */
const RE2_INSTRUCTIONS_PER_CHARACTER = 2;
const RE2_MAX_REPETITION = 1_000;
const RE2_COMPILE_STEPS_PER_INSTRUCTION = 50;
/**
 * Building an error (with its stack) costs as much as many steps. Comprehensions and `&&`, `||` absorb
 * errors and carry on, so each of their iterations or operands may pay for one.
 */
const ERROR_STEPS = 1_500;

/** Measured input objects; they are the request's own, so entries go with the request. */
const measured = new WeakMap<object, Bound>();

function measure(value: unknown): Bound {
  if (typeof value === 'string') return { size: value.length, total: value.length + 1 };
  if (value instanceof Uint8Array) return { size: value.length, total: value.length + 1 };
  if (value === null || typeof value !== 'object') return SCALAR;
  const cached = measured.get(value);
  if (cached) return cached;
  let size = 0;
  let total = 1;
  const add = (item: unknown, keyLength: number) => {
    const inner = measure(item);
    if (inner.size > size) size = inner.size;
    if (keyLength > size) size = keyLength;
    total += inner.total + keyLength;
  };
  if (Array.isArray(value)) {
    size = value.length;
    for (const item of value) add(item, 0);
  } else {
    const keys = Object.keys(value);
    size = keys.length;
    for (const key of keys) add((value as Record<string, unknown>)[key], key.length);
  }
  const bound = { size, total };
  measured.set(value, bound);
  return bound;
}

function lengthOf(bound: Bound): number {
  const value = bound.known?.value;
  if (Array.isArray(value) || typeof value === 'string') return value.length;
  if (value !== null && typeof value === 'object') return Object.keys(value).length;
  return bound.size;
}

/** What an iteration variable can hold: the largest element (or map key) when the list is known. */
function elementBound(source: Bound): Bound {
  const value = source.known?.value;
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return { size: source.size, total: source.total };
  let size = 0;
  let total = 1;
  for (const element of Array.isArray(value) ? value : Object.keys(value)) {
    const bound = measure(element);
    if (bound.size > size) size = bound.size;
    if (bound.total > total) total = bound.total;
  }
  return { size, total };
}

function child(parent: Bound, key: unknown): Bound {
  const container = parent.known?.value;
  if (container !== null && typeof container === 'object' && !(container instanceof Uint8Array)) {
    const index = typeof key === 'bigint' || typeof key === 'number' ? Number(key) : key;
    const found = Array.isArray(container)
      ? typeof index === 'number' && Number.isInteger(index) && index >= 0 && index < container.length
      : typeof index === 'string' && Object.hasOwn(container, index);
    // A missing key is an evaluation error: nothing below it is ever read.
    if (!found) return SCALAR;
    const value = (container as Record<string | number, unknown>)[index as string | number];
    return { ...measure(value), known: { value } };
  }
  return { size: parent.size, total: parent.total };
}

function join(a: Bound, b: Bound): Bound {
  return { size: Math.max(a.size, b.size), total: Math.max(a.total, b.total) };
}

type Scope = ReadonlyMap<string, Bound>;

function estimate(node: ASTNode, scope: Scope): Estimate {
  const comprehension = asComprehension(node);
  if (comprehension) return estimateComprehension(comprehension, scope);
  switch (node.op) {
    case 'value': {
      const value = node.args;
      return { ...measure(value), known: { value }, cost: 1 };
    }
    case 'id': {
      const bound = scope.get(node.args);
      return bound ? { ...bound, cost: 1 } : { ...SCALAR, cost: Infinity };
    }
    case '.':
    case '.?': {
      const receiver = estimate(node.args[0], scope);
      return { ...child(receiver, node.args[1]), cost: receiver.cost + 1 + node.args[1].length };
    }
    case '[]':
    case '[?]': {
      const [receiver, key] = node.args.map((part) => estimate(part, scope)) as [Estimate, Estimate];
      const bound = key.known ? child(receiver, key.known.value) : { size: receiver.size, total: receiver.total };
      return { ...bound, cost: receiver.cost + key.cost + 1 + key.size };
    }
    case 'list': {
      const items = node.args.map((item) => estimate(item, scope));
      return {
        size: Math.max(items.length, ...items.map((item) => item.size)),
        total: 1 + sum(items.map((item) => item.total)),
        cost: items.length + sum(items.map((item) => item.cost)),
      };
    }
    case 'map': {
      const parts = node.args.flat().map((part) => estimate(part, scope));
      return {
        size: Math.max(node.args.length, ...parts.map((part) => part.size)),
        total: 1 + sum(parts.map((part) => part.total)),
        cost: node.args.length + sum(parts.map((part) => part.cost)),
      };
    }
    case '?:': {
      const [condition, then, otherwise] = node.args.map((part) => estimate(part, scope)) as [Estimate, Estimate, Estimate];
      return { ...join(then, otherwise), cost: condition.cost + Math.max(then.cost, otherwise.cost) + 1 };
    }
    case 'call':
    case 'rcall':
      return estimateCall(node, scope);
    default:
      return estimateOperator(node, scope);
  }
}

function estimateOperator(node: ASTNode, scope: Scope): Estimate {
  const operands = childrenOf(node).map((operand) => estimate(operand, scope));
  const cost = 1 + sum(operands.map((operand) => operand.cost));
  const [a, b] = operands as [Estimate, Estimate];
  switch (node.op) {
    case '+':
      // Concatenation copies both sides (numbers have size 0, so arithmetic stays cheap).
      return { size: a.size + b.size, total: a.total + b.total, cost: cost + a.size + b.size };
    case '==':
    case '!=':
      return { ...SCALAR, cost: cost + a.total + b.total };
    case '<':
    case '<=':
    case '>':
    case '>=':
      return { ...SCALAR, cost: cost + a.size + b.size };
    case 'in':
      return { ...SCALAR, cost: cost + b.size * (a.total + 1) + b.total };
    case '&&':
    case '||':
      return { ...SCALAR, cost: cost + (childrenOf(node).some(mayFail) ? ERROR_STEPS : 0) };
    default:
      // ! and unary minus, - * / %: constant work on scalars.
      return { ...SCALAR, cost };
  }
}

/** Whether evaluating a node can raise an error: anything but literals, variables, equality and logic over them. */
function mayFail(node: ASTNode): boolean {
  if (node.op === 'value' || node.op === 'id') return false;
  if (node.op === '==' || node.op === '!=' || node.op === '&&' || node.op === '||' || node.op === '!_')
    return childrenOf(node).some(mayFail);
  return true;
}

function estimateComprehension(
  { name, receiver, variable, bodies }: NonNullable<ReturnType<typeof asComprehension>>,
  scope: Scope,
): Estimate {
  const source = estimate(receiver, scope);
  const iterations = lengthOf(source);
  const inner = new Map(scope).set(variable, elementBound(source));
  const steps = bodies.map((body) => estimate(body, inner));
  const perIteration = 1 + sum(steps.map((step) => step.cost)) + (bodies.some(mayFail) ? ERROR_STEPS : 0);
  const cost = source.cost + 1 + iterations * perIteration;
  if (name === 'filter') return { size: source.size, total: source.total, cost };
  if (name === 'map') {
    const produced = steps.at(-1)!;
    return { size: Math.max(iterations, produced.size), total: 1 + iterations * produced.total, cost };
  }
  return { ...SCALAR, cost };
}

function estimateCall(node: ASTNode, scope: Scope): Estimate {
  const [name, receiverNode, argNodes] =
    node.op === 'rcall'
      ? (node.args as [string, ASTNode, ASTNode[]])
      : [(node.args as [string, ASTNode[]])[0], null, (node.args as [string, ASTNode[]])[1]];

  if (name === 'bind' && receiverNode?.op === 'id' && receiverNode.args === 'cel') {
    const [variable, value, body] = argNodes as [ASTNode, ASTNode, ASTNode];
    const bound = estimate(value, scope);
    const result = estimate(body, new Map(scope).set(variable.args as string, bound));
    return { ...result, cost: bound.cost + result.cost + 1 };
  }
  if (name === 'has') return { ...SCALAR, cost: 1 + estimate(argNodes[0]!, scope).cost };

  const receiver = receiverNode ? estimate(receiverNode, scope) : null;
  const args = argNodes.map((arg) => estimate(arg, scope));
  const operands = receiver ? [receiver, ...args] : args;
  const base = 1 + sum(operands.map((operand) => operand.cost));
  const [subject, argument] = operands as [Estimate, Estimate | undefined];
  const argumentSize = argument?.size ?? 0;

  if (CONSTANT_FUNCTIONS.has(name)) return { ...SCALAR, cost: base + TIME_FUNCTION_STEPS };
  switch (name) {
    case 'contains':
    case 'startsWith':
    case 'endsWith':
    case 'indexOf':
    case 'lastIndexOf':
      return { ...SCALAR, cost: base + (subject.size + 1) * (argumentSize + 1) };
    case 'matches':
      return { ...SCALAR, cost: base + matchCost(subject, argument!) };
    case 'lowerAscii':
    case 'upperAscii':
    case 'trim':
    case 'substring':
      return { size: subject.size, total: subject.total, cost: base + subject.size };
    case 'split':
      return { size: subject.size + 1, total: 2 * subject.size + 2, cost: base + (subject.size + 1) * (argumentSize + 1) };
    case 'join': {
      const length = subject.total + subject.size * argumentSize;
      return { size: length, total: length + 1, cost: base + length };
    }
    case 'hex':
    case 'base64':
    case 'string':
      if (receiver) return grown(subject, 2, base);
      break;
    case 'json':
      return { size: subject.size, total: subject.size + 1, cost: base + subject.size };
    case 'dyn':
      return { ...subject, cost: base };
  }
  if (CONVERSIONS.has(name) && !receiver) return grown(subject, 4, base + TIME_FUNCTION_STEPS);
  return { ...SCALAR, cost: Infinity };
}

/** A conversion whose output is at most `factor` times its input, plus a short constant. */
function grown(subject: Bound, factor: number, base: number): Estimate {
  const length = factor * subject.total + SHORT_STRING;
  return { size: length, total: length + 1, cost: base + subject.total };
}

/**
 * RE2 compiles the pattern, then works in time linear in text × program. The program is bounded
 * from the pattern's text without compiling it, since compiling is the expensive part.
 */
function matchCost(text: Bound, pattern: Bound): number {
  const known = pattern.known?.value;
  const repetition = typeof known === 'string' ? repetitionBound(known) : RE2_MAX_REPETITION;
  const program = (RE2_INSTRUCTIONS_PER_CHARACTER * pattern.size + 2) * repetition;
  return (text.size + 1) * program + RE2_COMPILE_STEPS_PER_INSTRUCTION * program;
}

const COUNTED_REPETITION = /\{(\d+)(?:,(\d*))?\}/g;

/**
 * How many copies of one pattern character a program can hold at most: the product of every
 * repetition count in the pattern (a repetition copies at most its largest count, or its least
 * plus one when open-ended), capped where RE2 refuses. Sequential repetitions only need the
 * largest, so the product overestimates them, which is safe.
 */
function repetitionBound(pattern: string): number {
  let product = 1;
  for (const [, least, most] of pattern.matchAll(COUNTED_REPETITION)) {
    const copies = most === undefined ? Number(least) : most === '' ? Number(least) + 1 : Number(most);
    product = Math.min(RE2_MAX_REPETITION, product * Math.max(1, copies));
  }
  return product;
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

/** The bound on the work of evaluating `expression` against `input`, in steps. */
export function ruleCost(expression: string, input: RuleInput): number {
  const variables = new Map<string, Bound>(
    Object.entries(input).map(([name, value]): [string, Bound] => [name, { ...measure(value), known: { value } }]),
  ).set('cel', SCALAR);
  return estimate(compileRule(expression).ast, variables).cost;
}

/** The smallest input a rule can see: every later input costs at least as much. */
export const EMPTY_INPUT: RuleInput = { action: '', payload: {}, agent: null, context: null };
