import type { z } from 'zod';
import type { FieldError } from './errors.js';

/** Zod issues as the field errors of docs/api.md, with paths as the client wrote them. */
export function fieldErrors(error: z.ZodError, root: string): FieldError[] {
  return error.issues.flatMap((issue) => {
    const path = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => {
        const keyPath = path ? `${path}.${key}` : key;
        return { path: keyPath, message: `${keyPath} is not a known field` };
      });
    }
    return [{ path: path || root, message: issue.message }];
  });
}

/**
 * Parses `value` with messages written for people (see `describeIssue`): `payload is required and
 * must be an object` rather than the library's `expected record, received undefined`. `root`
 * names the value itself (`body`, `query`) when the problem is not in one of its fields.
 */
export function validate<S extends z.ZodType>(
  schema: S,
  value: unknown,
  root: string,
): { success: true; data: z.output<S> } | { success: false; errors: FieldError[] } {
  const result = schema.safeParse(value, { error: (issue) => describeIssue(issue, root) });
  return result.success ? { success: true, data: result.data } : { success: false, errors: fieldErrors(result.error, root) };
}

/** A field as messages name it: its dotted path as sent. */
export function fieldName(path: readonly PropertyKey[] | undefined, root: string): string {
  return path && path.length > 0 ? path.map(String).join('.') : root;
}

/**
 * The error map behind `validate`: one sentence naming the field and what it accepts, read from
 * the schema itself (its type, bounds, format or options), so every schema gets it. A message a
 * schema gives itself still wins over this one.
 */
function describeIssue(issue: z.core.$ZodRawIssue, root: string): string {
  const name = fieldName(issue.path, root);
  if (issue.code === 'invalid_format' && issue.format === 'regex' && 'pattern' in issue) return `${name} must match ${issue.pattern}`;
  switch (issue.code) {
    case 'not_multiple_of':
      return `${name} must be a multiple of ${issue.divisor}`;
    case 'invalid_format':
    case 'invalid_type':
    case 'invalid_value':
    case 'invalid_union':
    case 'too_small':
    case 'too_big': {
      // A format is described by the format check itself (`z.string().email()` is a string with an
      // email check); anything else by the schema that raised it or owns the check that did.
      const source = issue.code === 'invalid_format' ? (issue.inst as z.core.$ZodType | undefined) : issue.schema;
      const expected = (source && describeExpected(source)) ?? (issue.code === 'invalid_type' ? `of type ${issue.expected}` : undefined);
      if (!expected) return `${name} is not valid`;
      return issue.input === undefined ? `${name} is required and must be ${expected}` : `${name} must be ${expected}`;
    }
    case 'invalid_key':
      return `${name} has a key that is not allowed`;
    case 'invalid_element':
      return `${name} has an element that is not allowed`;
    default:
      return `${name} is not valid`;
  }
}

const FORMATS: Record<string, string> = {
  uuid: 'a UUID',
  guid: 'a UUID',
  email: 'an email address',
  url: 'a URL',
  datetime: 'an ISO 8601 date-time',
  date: 'a date (YYYY-MM-DD)',
  time: 'a time (HH:MM[:SS])',
  duration: 'an ISO 8601 duration',
  ipv4: 'an IPv4 address',
  ipv6: 'an IPv6 address',
};

/** The parts of a schema's definition the messages read; zod documents `_zod.def` for this use. */
interface SchemaDef {
  type: string;
  checks?: { _zod: { def: CheckDef } }[];
  format?: string;
  offset?: boolean;
  innerType?: z.core.$ZodType;
  in?: z.core.$ZodType;
  options?: z.core.$ZodType[];
  entries?: Record<string, string | number>;
  values?: unknown[];
}

interface CheckDef {
  check: string;
  value?: number | bigint;
  inclusive?: boolean;
  minimum?: number;
  maximum?: number;
  length?: number;
  format?: string;
}

function defOf(schema: z.core.$ZodType): SchemaDef {
  return schema._zod.def as unknown as SchemaDef;
}

/** What `schema` accepts, as the end of "<field> must be …"; undefined where there is nothing to say. */
export function describeExpected(schema: z.core.$ZodType): string | undefined {
  const def = defOf(schema);
  const checks = [def as unknown as CheckDef, ...(def.checks ?? []).map((check) => check._zod.def)];
  switch (def.type) {
    case 'string':
      if (def.format === 'datetime') return `an ISO 8601 date-time (${def.offset ? 'with Z or an offset' : 'in UTC, ending in Z'})`;
      if (def.format && def.format !== 'regex') return FORMATS[def.format] ?? `a valid ${def.format}`;
      return `a ${sized('string', 'character', checks)}`;
    case 'number':
    case 'int':
      return numberRange(checks);
    case 'boolean':
      return 'true or false';
    case 'object':
    case 'record':
      return 'an object';
    case 'array':
      return `an ${sized('array', 'item', checks)}`;
    case 'null':
      return 'null';
    case 'enum':
      return oneOf(Object.values(def.entries ?? {}));
    case 'literal':
      return oneOf(def.values ?? []);
    case 'union': {
      const options = (def.options ?? []).map(describeExpected);
      if (options.some((option) => option === undefined)) return undefined;
      return [...new Set(options)].join(' or ');
    }
    case 'optional':
    case 'nonoptional':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
      return def.innerType && describeExpected(def.innerType);
    case 'nullable':
      return def.innerType && `${describeExpected(def.innerType)} or null`;
    case 'pipe':
      return def.in && describeExpected(def.in);
    default:
      return undefined;
  }
}

function sized(noun: string, unit: string, checks: CheckDef[]): string {
  const exact = checks.find((check) => check.check === 'length_equals')?.length;
  const min = Math.max(0, ...checks.filter((check) => check.check === 'min_length').map((check) => check.minimum!));
  const max = Math.min(Infinity, ...checks.filter((check) => check.check === 'max_length').map((check) => check.maximum!));
  const units = (count: number) => `${count} ${unit}${count === 1 ? '' : 's'}`;
  if (exact !== undefined) return `${noun} of exactly ${units(exact)}`;
  if (max < Infinity) return min > 0 ? `${noun} of ${min} to ${units(max)}` : `${noun} of at most ${units(max)}`;
  if (min === 1 && unit === 'character') return `non-empty ${noun}`;
  return min > 0 ? `${noun} of at least ${units(min)}` : noun;
}

/** "an integer from 1 to 30", "a number greater than 0", …: the bounds a number schema checks. */
function numberRange(checks: CheckDef[]): string {
  const integer = checks.some((check) => check.check === 'number_format' && check.format?.includes('int'));
  let low: { value: number; inclusive: boolean } | undefined;
  let high: { value: number; inclusive: boolean } | undefined;
  for (const check of checks) {
    const bound = { value: Number(check.value), inclusive: check.inclusive ?? true };
    // The safe-integer limits every integer has go without saying.
    if (Math.abs(bound.value) >= Number.MAX_SAFE_INTEGER) continue;
    if (check.check === 'greater_than' && (!low || bound.value >= low.value)) low = bound;
    if (check.check === 'less_than' && (!high || bound.value <= high.value)) high = bound;
  }
  // An integer above 0 is an integer from 1: say it the way people count.
  if (integer && low && !low.inclusive) low = { value: Math.floor(low.value) + 1, inclusive: true };
  if (integer && high && !high.inclusive) high = { value: Math.ceil(high.value) - 1, inclusive: true };
  const noun = integer ? 'an integer' : 'a number';
  if (low?.inclusive && high?.inclusive) return `${noun} from ${low.value} to ${high.value}`;
  const bounds = [
    low && (low.inclusive ? `of at least ${low.value}` : `greater than ${low.value}`),
    high && (high.inclusive ? `of at most ${high.value}` : `less than ${high.value}`),
  ].filter(Boolean);
  return [noun, bounds.join(' and ')].filter(Boolean).join(' ');
}

function oneOf(values: readonly unknown[]): string {
  const quoted = values.map((value) => (typeof value === 'string' ? `'${value}'` : String(value)));
  if (quoted.length <= 2) return quoted.join(' or ');
  return `one of ${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`;
}
