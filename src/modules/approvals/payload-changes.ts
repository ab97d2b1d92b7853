/**
 * Which fields of a payload a revision changed, as reviewers read it in the mail, in Slack and in
 * the console (see docs/members-and-channels.md#revised-requests): the top-level keys whose values
 * differ, and inside objects present on both sides the nested keys, as dotted paths, sorted. Arrays and
 * values of different kinds count as one changed field. No imports: the console bundles it too.
 */
export interface ChangedFields {
  /** The changed paths in key order, at most MAX_CHANGED_FIELDS of them. */
  fields: string[];
  /** How many paths changed in all (more than `fields.length` when the list was cut). */
  total: number;
}

/** The most paths a notice lists; the rest are counted. */
export const MAX_CHANGED_FIELDS = 20;
/** Paths go no deeper than this: a change further down is named by its ancestor at this depth. */
const MAX_DEPTH = 4;
/** A key longer than this is cut (a payload's keys are the requester's text, of any length). */
const MAX_KEY_CHARACTERS = 40;

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, index) => sameJson(item, b[index]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && sameJson(a[key], b[key]));
  }
  return false;
}

function segment(key: string): string {
  return key.length > MAX_KEY_CHARACTERS ? `${key.slice(0, MAX_KEY_CHARACTERS - 1)}…` : key;
}

/** One changed field: its path, and its value before and after (undefined where it is absent). */
export interface FieldChange {
  path: string;
  before: unknown;
  after: unknown;
}

/**
 * The fields that differ between two payloads (JSON objects), with their values: at most `limit`
 * of them, and how many there are in all.
 */
export function fieldChanges(before: unknown, after: unknown, limit = MAX_CHANGED_FIELDS): { changes: FieldChange[]; total: number } {
  const changes: FieldChange[] = [];
  let total = 0;
  const walk = (a: JsonObject, b: JsonObject, prefix: string, depth: number) => {
    // In key order: the database keeps no order of its own for a payload's keys.
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const key of keys) {
      const path = prefix + segment(key);
      const [x, y] = [Object.hasOwn(a, key) ? a[key] : undefined, Object.hasOwn(b, key) ? b[key] : undefined];
      if (isObject(x) && isObject(y) && depth < MAX_DEPTH) {
        walk(x, y, `${path}.`, depth + 1);
      } else if (!sameJson(x, y)) {
        total += 1;
        if (changes.length < limit) changes.push({ path, before: x, after: y });
      }
    }
  };
  if (isObject(before) && isObject(after)) walk(before, after, '', 1);
  else if (!sameJson(before, after)) return { changes: [{ path: WHOLE_PAYLOAD, before, after }], total: 1 };
  return { changes, total };
}

const WHOLE_PAYLOAD = '(the whole payload)';

/** The fields that differ between two payloads (JSON objects), bounded as ChangedFields says. */
export function changedFields(before: unknown, after: unknown): ChangedFields {
  const { changes, total } = fieldChanges(before, after);
  return { fields: changes.map((change) => change.path), total };
}

/** The changed fields as one line: "amount, recipient.iban and 3 more", or "nothing" for an unchanged payload. */
export function describeChangedFields({ fields, total }: ChangedFields): string {
  if (total === 0) return 'nothing (the same payload)';
  const more = total - fields.length;
  return more > 0 ? `${fields.join(', ')} and ${more} more` : fields.join(', ');
}
