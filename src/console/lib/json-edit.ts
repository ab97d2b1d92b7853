import { diffLines } from 'diff';
import { prettyJson } from './format';

/** A payload as typed in the editor: an object the API accepts, or why it is not one. */
export type ParsedPayload = { ok: true; value: Record<string, unknown> } | { ok: false; message: string };

export function parsePayload(text: string): ParsedPayload {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `Not valid JSON: ${(error as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, message: 'The payload must be a JSON object.' };
  return { ok: true, value: value as Record<string, unknown> };
}

export interface DiffLine {
  kind: 'added' | 'removed' | 'same';
  text: string;
}

/**
 * A JSON value with every object's keys sorted: the database keeps no key order of its own, so two
 * payloads are compared line by line in one order, and only what changed shows.
 */
export function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]),
  );
}

/** The change between two JSON values (payloads, policy documents), line by line over their pretty-printed JSON. */
export function jsonLineDiff(before: unknown, after: unknown): DiffLine[] {
  return diffLines(prettyJson(before), prettyJson(after)).flatMap((change) =>
    change.value
      .replace(/\n$/, '')
      .split('\n')
      .map((text) => ({ kind: change.added ? 'added' : change.removed ? 'removed' : 'same', text }) as const),
  );
}
