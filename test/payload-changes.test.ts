import { describe, expect, it } from 'vitest';
import { changedFields, describeChangedFields, MAX_CHANGED_FIELDS } from '../src/modules/approvals/payload-changes.js';

describe('changedFields', () => {
  it('names changed, added and removed top-level fields, and nested ones as dotted paths, sorted', () => {
    const before = { amount: 120, currency: 'EUR', to: { iban: 'DE01', name: 'Ada' }, tags: ['a'], gone: true };
    const after = { amount: 100, currency: 'EUR', to: { iban: 'DE02', name: 'Ada' }, tags: ['a', 'b'], memo: 'x' };
    expect(changedFields(before, after)).toEqual({ fields: ['amount', 'gone', 'memo', 'tags', 'to.iban'], total: 5 });
    expect(describeChangedFields(changedFields(before, after))).toBe('amount, gone, memo, tags, to.iban');
  });

  it('counts an object replaced by another kind of value, and equal values in another key order, as one and none', () => {
    expect(changedFields({ to: { iban: 'x' } }, { to: 'x' })).toEqual({ fields: ['to'], total: 1 });
    expect(changedFields({ a: { x: 1, y: [1, { z: 2 }] } }, { a: { y: [1, { z: 2 }], x: 1 } })).toEqual({ fields: [], total: 0 });
    expect(describeChangedFields({ fields: [], total: 0 })).toBe('nothing (the same payload)');
  });

  it('is bounded: at most MAX_CHANGED_FIELDS paths with a count of the rest, short keys, a limited depth', () => {
    const many = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`field${String(i).padStart(2, '0')}`, i]));
    const changes = changedFields({}, many);
    expect(changes.fields).toHaveLength(MAX_CHANGED_FIELDS);
    expect(changes.total).toBe(50);
    expect(describeChangedFields(changes)).toMatch(/field19 and 30 more$/);

    const long = 'k'.repeat(5000);
    expect(changedFields({ [long]: 1 }, { [long]: 2 }).fields[0]).toHaveLength(40);

    const deep = (leaf: number) => ({ a: { b: { c: { d: { e: { f: leaf } } } } } });
    expect(changedFields(deep(1), deep(2)).fields).toEqual(['a.b.c.d']);
  });
});
