import { z } from 'zod';
import { describeExpected } from './validation.js';

/**
 * Schema pieces for input that must reach PostgreSQL intact: valid JSON can still hold what a
 * `text` or `jsonb` column refuses (U+0000, lone UTF-16 surrogates), numbers JSON.parse turned
 * into Infinity (`1e309`), nesting deep enough to overflow a recursive serializer, and dates
 * outside PostgreSQL's range. Each is refused at validation as a 422 naming the field.
 */

/** Objects and arrays nest at most this deep in a payload, context or editedPayload (`{}` is 1). */
export const MAX_JSON_DEPTH = 64;

const LONE_SURROGATE = /\p{Surrogate}/u;

/** What in `text` PostgreSQL cannot store, described for a person, or null. */
export function unstorableCharacter(text: string): string | null {
  if (text.includes('\u0000')) return 'the NUL character (U+0000)';
  const surrogate = LONE_SURROGATE.exec(text);
  if (surrogate) {
    const code = surrogate[0].charCodeAt(0).toString(16).toUpperCase();
    return `a lone UTF-16 surrogate (U+${code} at position ${surrogate.index}), which is not a character`;
  }
  return null;
}

/** A string PostgreSQL can store; `label` names the field in the message. */
export function storableString(label: string) {
  return z.string().superRefine((value, ctx) => {
    const problem = unstorableCharacter(value);
    if (problem) ctx.addIssue({ code: 'custom', message: `${label} must not contain ${problem}` });
  });
}

/**
 * The first problem in a JSON value that PostgreSQL (or a recursive serializer) cannot take.
 * `path` is the walk's own stack (copied only when a problem is found), so that checking a
 * payload of many small values allocates nothing per value.
 */
function jsonProblem(value: unknown, path: (string | number)[], depth: number): { path: (string | number)[]; problem: string } | null {
  if (typeof value === 'string') {
    const problem = unstorableCharacter(value);
    return problem ? { path: [...path], problem: `must not contain ${problem}` } : null;
  }
  if (typeof value === 'number') {
    // JSON.parse reads numbers beyond a double's range (1e309) as Infinity, which JSON cannot write back.
    return Number.isFinite(value)
      ? null
      : { path: [...path], problem: 'must be a finite number: it is beyond the range of a double (about 1.8e308)' };
  }
  if (value === null || typeof value !== 'object') return null;
  if (depth > MAX_JSON_DEPTH)
    return { path: [...path], problem: `is nested too deep: objects and arrays may nest at most ${MAX_JSON_DEPTH} levels` };
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      path.push(index);
      const found = jsonProblem(value[index], path, depth + 1);
      path.pop();
      if (found) return found;
    }
    return null;
  }
  for (const key of Object.keys(value)) {
    path.push(key);
    const problem = unstorableCharacter(key);
    const found = problem
      ? { path: [...path], problem: `is a key that must not contain ${problem}` }
      : jsonProblem((value as Record<string, unknown>)[key], path, depth + 1);
    path.pop();
    if (found) return found;
  }
  return null;
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A JSON object exactly as sent: checked key by key and value by value, and passed on as the
 * very object that was parsed, so every key survives, `__proto__` included (a copy made by
 * assignment, as `z.record` makes, would turn that key into the copy's prototype and lose it).
 */
export function jsonObject(label: string) {
  return z
    .custom<Record<string, unknown>>(isJsonObject, {
      error: (issue) => (issue.input === undefined ? `${label} is required and must be an object` : `${label} must be an object`),
    })
    .superRefine((value, ctx) => {
      const found = jsonProblem(value, [], 1);
      if (!found) return;
      const where = [label, ...found.path].join('.');
      ctx.addIssue({ code: 'custom', path: found.path, message: `${where} ${found.problem}` });
    })
    .meta({ type: 'object', additionalProperties: {} });
}

/** PostgreSQL counts years 1 BC, 1 AD with no year 0 between; a four-digit ISO year ends at 9999. */
const EARLIEST_INSTANT = Date.parse('0001-01-01T00:00:00Z');

/**
 * An ISO 8601 instant, with `Z` or an offset, or a date meaning its UTC midnight, from
 * 0001-01-01 (UTC) on: a year-0000 date is valid ISO 8601 but names no year PostgreSQL knows.
 */
export function storableInstant(label: string) {
  return z
    .union([z.iso.datetime({ offset: true }), z.iso.date()])
    .transform((value) => new Date(value))
    .superRefine((instant, ctx) => {
      if (!(instant.getTime() >= EARLIEST_INSTANT)) {
        ctx.addIssue({ code: 'custom', message: `${label} must not be before 0001-01-01T00:00:00Z: there is no year 0` });
      }
    });
}

/**
 * A query-string integer: decimal digits only, so that `1e1`, `0x1e`, ` 5` and `` are refused (a
 * repeated parameter arrives as an array and is refused too). Documented as the integer it means.
 */
export function queryInteger(label: string, min: number, max: number) {
  const integer = z.number().int().min(min).max(max);
  return z
    .string()
    .regex(/^\d{1,16}$/, `${label} must be ${describeExpected(integer)}`)
    .transform(Number)
    .pipe(integer)
    .meta({ type: 'integer', minimum: min, maximum: max });
}
