import fc from 'fast-check';

/**
 * Generators of JSON request bodies an attacker would send: strings with NUL and lone
 * surrogates, numbers beyond a double (written as `1e309`, which JSON.stringify cannot produce),
 * nesting past any limit, and keys such as `__proto__`. Values are kept as a small tree and
 * written out by hand, so the bytes sent are exactly the ones generated.
 */
export type JsonTree =
  | { kind: 'raw'; text: string }
  | { kind: 'array'; items: JsonTree[] }
  | { kind: 'object'; entries: [string, JsonTree][] }
  /** `inner` wrapped in `depth` objects `{"n": …}`; kept as a count so that a report of it stays small. */
  | { kind: 'nested'; depth: number; inner: JsonTree };

const awkwardCharacter = fc.constantFrom('\u0000', '\ud800', '\udfff', '\ud83d\ude00', 'é', '\n', '"', '\\', '.', '%', '\u2028', 'a');

export const hostileString = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: awkwardCharacter, maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
);

export const hostileKey = fc.oneof(
  hostileString,
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', '', 'a.b', '0', 'x'),
);

const numberText = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => JSON.stringify(value)),
  fc.constantFrom('1e309', '-1e400', '-0', '9007199254740993', '1e308', '5e-324', '0.1', '1.0'),
);

const scalar: fc.Arbitrary<JsonTree> = fc.oneof(
  hostileString.map((text) => ({ kind: 'raw' as const, text: JSON.stringify(text) })),
  numberText.map((text) => ({ kind: 'raw' as const, text })),
  fc.constantFrom('true', 'false', 'null').map((text) => ({ kind: 'raw' as const, text })),
);

const { tree } = fc.letrec<{ tree: JsonTree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('tree'), { maxLength: 4 }).map((items) => ({ kind: 'array' as const, items })),
    fc.array(fc.tuple(hostileKey, tie('tree')), { maxLength: 4 }).map((entries) => ({ kind: 'object' as const, entries })),
  ),
}));

/** A JSON object, sometimes wrapped in enough levels to pass the nesting limit (or 5,000 of them). */
export const hostileObject: fc.Arbitrary<JsonTree> = fc
  .tuple(
    fc.array(fc.tuple(hostileKey, tree), { maxLength: 5 }),
    fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 80 }), fc.constant(5000)),
  )
  .map(([entries, depth]): JsonTree => {
    const inner: JsonTree = { kind: 'object', entries };
    return depth === 0 ? inner : { kind: 'nested', depth, inner };
  });

/** Any JSON value, including wrong types where an object is expected. */
export const hostileValue: fc.Arbitrary<JsonTree> = fc.oneof(hostileObject, tree);

export function jsonText(value: JsonTree): string {
  if (value.kind === 'raw') return value.text;
  if (value.kind === 'array') return `[${value.items.map(jsonText).join(',')}]`;
  if (value.kind === 'nested') return `${'{"n":'.repeat(value.depth)}${jsonText(value.inner)}${'}'.repeat(value.depth)}`;
  return `{${value.entries.map(([key, item]) => `${JSON.stringify(key)}:${jsonText(item)}`).join(',')}}`;
}

/** A body object whose fields are trees; undefined fields are left out. */
export function bodyText(fields: Record<string, JsonTree | undefined>): string {
  return jsonText({
    kind: 'object',
    entries: Object.entries(fields).filter((entry): entry is [string, JsonTree] => entry[1] !== undefined),
  });
}

export const str = (text: string): JsonTree => ({ kind: 'raw', text: JSON.stringify(text) });

/** A string field: usually well-formed (so that 2xx answers are explored too), sometimes hostile, sometimes not a string. */
export function stringField(valid: fc.Arbitrary<string>): fc.Arbitrary<JsonTree> {
  return fc.oneof(
    { weight: 4, arbitrary: valid.map(str) },
    { weight: 2, arbitrary: hostileString.map(str) },
    { weight: 1, arbitrary: tree },
  );
}
