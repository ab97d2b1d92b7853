import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestEnv } from './support/test-env.js';

/**
 * Every use of Intl in this test's process, from here on: installed before the app's modules are
 * imported (dynamically, below), so that what they run as they load counts too.
 */
const intlUses: string[] = [];
const restores: (() => void)[] = [];
function record(name: string): void {
  intlUses.push(`${name} ${new Error().stack?.split('\n')[3]?.trim() ?? ''}`);
}
for (const name of [
  'Collator',
  'DateTimeFormat',
  'DisplayNames',
  'ListFormat',
  'NumberFormat',
  'PluralRules',
  'RelativeTimeFormat',
  'Segmenter',
] as const) {
  const original = Intl[name];
  // @ts-expect-error a recording stand-in for the constructor, put back after the tests
  Intl[name] = new Proxy(original, {
    construct: (target, args) => (record(`Intl.${name}`), Reflect.construct(target, args)),
    apply: (target, self, args) => (record(`Intl.${name}`), Reflect.apply(target, self, args)),
  });
  // @ts-expect-error as above
  restores.push(() => (Intl[name] = original));
}
const localeMethods: [object, string][] = [
  [Number.prototype, 'toLocaleString'],
  [Date.prototype, 'toLocaleString'],
  [Date.prototype, 'toLocaleDateString'],
  [Date.prototype, 'toLocaleTimeString'],
  [String.prototype, 'localeCompare'],
];
for (const [owner, method] of localeMethods) {
  const original = (owner as Record<string, (...args: unknown[]) => unknown>)[method]!;
  Object.defineProperty(owner, method, {
    configurable: true,
    writable: true,
    value(this: unknown, ...args: unknown[]) {
      record(method);
      return original.apply(this, args);
    },
  });
  restores.push(() => Object.defineProperty(owner, method, { configurable: true, writable: true, value: original }));
}

let env: TestEnv;
let formatCount: (count: number) => string;

beforeAll(async () => {
  ({ formatCount } = await import('../src/lib/display-count.js'));
  const { createTestEnv } = await import('./support/test-env.js');
  env = await createTestEnv();
});

afterAll(async () => {
  await env?.close();
  restores.forEach((restore) => restore());
});

describe('a web process', () => {
  it('creates, long-polls, decides and lists without touching Intl: its first use maps ICU data into the process', async () => {
    const org = await env.createOrg();
    await org
      .request('put', '/v1/policies/refunds')
      .send({ rules: [{ when: 'payload.amount > 100', outcome: 'review' }], defaultOutcome: 'allow' })
      .expect(200);
    await org
      .request('post', '/v1/approvals')
      .send({ action: 'refund', payload: { amount: 5 }, policyKey: 'refunds' })
      .expect(200);
    const created = await org
      .request('post', '/v1/approvals')
      .send({ action: 'refund', payload: { amount: 500 }, policyKey: 'refunds' })
      .expect(201);
    // The long-poll is sent, and has a moment to start waiting, before the decision wakes it.
    const waited = org.request('get', `/v1/approvals/${created.body.id}?wait=5`).then((response) => response.body as { status: string });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await org.asReviewer('post', `/v1/approvals/${created.body.id}/decision`).send({ verdict: 'approved' }).expect(200);
    expect((await waited).status).toBe('approved');
    await org.request('get', '/v1/approvals?status=approved').expect(200);
    await org.request('get', '/v1/audit').expect(200);
    expect(intlUses).toEqual([]);
  });
});

describe('formatCount', () => {
  it('writes a count as en-US does, thousands separated by commas', () => {
    // Compared once the test above has run: this is a use of Intl of its own.
    for (const count of [0, 7, 999, 1_000, 12_345, 100_000, 1_000_000, 2 ** 31, Number.MAX_SAFE_INTEGER]) {
      expect(formatCount(count)).toBe(count.toLocaleString('en-US'));
    }
  });
});
