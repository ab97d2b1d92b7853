import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_EVENT_TYPES } from '../src/modules/audit/audit-events.js';
import { jcs } from './support/audit-chain.js';
import { bodyText, hostileObject, hostileString, hostileValue, str, stringField, type JsonTree } from './support/hostile-json.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

/**
 * Generated hostile bodies against every write endpoint that takes one. Whatever is sent, the
 * answer is a 2xx, or a 4xx problem+json (a 422 names at least one field), never a 5xx; and a
 * 2xx stored exactly what was sent, as a read afterwards shows. FUZZ_RUNS sets the cases per
 * endpoint (`npm run bench:fuzz` runs many more).
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const TIMEOUT_MS = Math.max(60_000, RUNS * 200);

let env: TestEnv;
let org: TestOrg;
let endpointId: string;
let memberId: string;
/** Decisions come from another key than the one that asked: nobody approves their own request. */
let deciderKey: string;

useTestEnv((created) => ({ env, org } = created));

beforeAll(async () => {
  await org
    .request('put', '/v1/policies/p')
    .send({ rules: [{ when: 'has(payload.x) && payload.x == 1.0', outcome: 'allow' }] })
    .expect(200);
  endpointId = (
    await org
      .request('post', '/v1/webhooks')
      .send({ url: 'http://127.0.0.1:9/hook', events: ['approval.approved'] })
      .expect(201)
  ).body.id;
  deciderKey = (await env.createKey(org.orgId, ['approvals:decide', 'approvals:read'])).key;
  memberId = (await org.request('post', '/v1/members').send({ email: 'fuzz-target@example.com', role: 'viewer' }).expect(201)).body.member
    .id;
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: { status?: number; errors?: { path: string; message: string }[] } & Record<string, unknown>;
  text: string;
}

async function send(method: 'post' | 'put' | 'patch', path: string, text: string, key = org.key): Promise<Answer> {
  return (await env.http[method](path)
    .set('authorization', `Bearer ${key}`)
    .set('content-type', 'application/json')
    .send(text)) as unknown as Answer;
}

/** The contract every answer keeps, whatever was sent. */
function expectWellFormed(answer: Answer, sent: string): void {
  const context = `${answer.status} ${answer.text.slice(0, 300)}\nsent: ${sent.slice(0, 300)}`;
  expect(answer.status, context).toBeLessThan(500);
  if (answer.status < 400) return;
  expect(answer.headers['content-type'], context).toMatch(/^application\/problem\+json/);
  expect(answer.body.status, context).toBe(answer.status);
  if (answer.status === 422) {
    expect(answer.body.errors?.length, context).toBeGreaterThan(0);
    for (const error of answer.body.errors!) expect(error.path, context).not.toBe('');
  }
}

/** The field as the server parsed it from the bytes sent. */
const parsed = (text: string, field: string): unknown => (JSON.parse(text) as Record<string, unknown>)[field];

const optional = (arbitrary: fc.Arbitrary<JsonTree>) => fc.option(arbitrary, { nil: undefined, freq: 3 });
const word = fc.stringMatching(/^[a-z][a-z0-9:_-]{0,15}$/);
const runs = { numRuns: RUNS, endOnFailure: true };

describe('every write endpoint, against generated hostile JSON', () => {
  it(
    'POST /v1/approvals',
    async () => {
      let serial = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            action: stringField(word),
            payload: fc.oneof({ weight: 5, arbitrary: hostileObject }, hostileValue),
            policyKey: stringField(fc.constant('p')),
            context: optional(fc.oneof(hostileObject, fc.constant({ kind: 'raw', text: 'null' } as JsonTree))),
            agent: optional(stringField(word)),
            idempotencyKey: optional(hostileString.map((key) => str(`${serial++}-${key}`))),
          }),
          async (fields) => {
            const text = bodyText(fields);
            const answer = await send('post', '/v1/approvals', text);
            expectWellFormed(answer, text);
            if (answer.status >= 300) return;
            const stored = (await org.request('get', `/v1/approvals/${answer.body.id as string}`).expect(200)).body;
            expect(jcs(stored.payload)).toBe(jcs(parsed(text, 'payload')));
            expect(stored.action).toBe(parsed(text, 'action'));
            expect(jcs(stored.context ?? null)).toBe(jcs(parsed(text, 'context') ?? null));
          },
        ),
        runs,
      );
    },
    TIMEOUT_MS,
  );

  it(
    'POST /v1/approvals/:id/decision',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            verdict: stringField(fc.constantFrom('approved', 'rejected')),
            feedback: optional(stringField(word)),
            editedPayload: optional(fc.oneof({ weight: 4, arbitrary: hostileObject }, hostileValue)),
          }),
          async (fields) => {
            const { body: pending } = await org
              .request('post', '/v1/approvals')
              .send({ action: 'a', payload: { y: 1 }, policyKey: 'p' })
              .expect(201);
            const text = bodyText(fields);
            const answer = await send('post', `/v1/approvals/${pending.id}/decision`, text, deciderKey);
            expectWellFormed(answer, text);
            if (answer.status >= 300) return;
            const stored = (await org.request('get', `/v1/approvals/${pending.id}`).expect(200)).body;
            expect(stored.status).toBe(parsed(text, 'verdict'));
            expect(stored.feedback).toBe(parsed(text, 'feedback') ?? null);
            expect(jcs(stored.payload)).toBe(jcs(parsed(text, 'editedPayload') ?? { y: 1 }));
          },
        ),
        runs,
      );
    },
    TIMEOUT_MS,
  );

  it(
    'PUT /v1/policies/:key',
    async () => {
      const expression = fc.oneof(
        fc.constantFrom('true', 'payload.x == 1.0', 'action.matches("^a+$")', 'payload.l.all(x, x > 0.0)', 'size(payload) > 2'),
        hostileString,
      );
      await fc.assert(
        fc.asyncProperty(
          fc.oneof({ weight: 3, arbitrary: word }, hostileString),
          fc.record({
            rules: optional(
              fc
                .oneof(
                  {
                    weight: 3,
                    arbitrary: fc.array(
                      fc.record({ when: stringField(expression), outcome: stringField(fc.constantFrom('allow', 'review')) }),
                      { maxLength: 3 },
                    ),
                  },
                  fc.constant([]),
                )
                .map((rules) => ({
                  kind: 'array' as const,
                  items: rules.map((rule) => ({ kind: 'object' as const, entries: Object.entries(rule) })),
                })),
            ),
            defaultOutcome: optional(stringField(fc.constantFrom('allow', 'review'))),
            timeoutSeconds: optional(
              fc.oneof(
                fc.integer({ min: -5, max: 3_000_000 }).map((n) => ({ kind: 'raw' as const, text: String(n) })),
                hostileValue,
              ),
            ),
            escalateTo: optional(stringField(word)),
          }),
          async (key, fields) => {
            let path: string;
            try {
              path = `/v1/policies/${encodeURIComponent(key)}`;
            } catch {
              path = '/v1/policies/%ED%A0%80';
            }
            const text = bodyText(fields);
            const answer = await send('put', path, text);
            expectWellFormed(answer, text);
            if (answer.status >= 300) return;
            const stored = (await org.request('get', path).expect(200)).body;
            expect(stored.key).toBe(key);
            expect(jcs(stored.rules)).toBe(jcs(parsed(text, 'rules') ?? []));
            expect(stored.escalateTo).toBe(parsed(text, 'escalateTo') ?? null);
          },
        ),
        runs,
      );
    },
    TIMEOUT_MS,
  );

  const url = fc.oneof(
    { weight: 3, arbitrary: hostileString.map((tail) => `http://127.0.0.1:9/${tail}`) },
    hostileString,
    fc.webUrl().map((address) => address.replace(/^https?:\/\/[^/]+/, 'http://127.0.0.1:9')),
  );
  const events = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.subarray([...WEBHOOK_EVENT_TYPES], { minLength: 1 }).map((list) => ({ kind: 'array' as const, items: list.map(str) })),
    },
    hostileValue,
  );

  it(
    'POST /v1/webhooks and PATCH /v1/webhooks/:id',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.record({ url: fc.oneof({ weight: 4, arbitrary: url.map(str) }, hostileValue), events }),
          fc.record({
            url: optional(fc.oneof({ weight: 4, arbitrary: url.map(str) }, hostileValue)),
            events: optional(events),
            enabled: optional(
              fc.oneof(
                fc.constantFrom('true', 'false').map((text) => ({ kind: 'raw' as const, text })),
                hostileValue,
              ),
            ),
          }),
          async (create, patch) => {
            const createText = bodyText(create);
            const created = await send('post', '/v1/webhooks', createText);
            expectWellFormed(created, createText);
            if (created.status < 300) {
              const stored = (await org.request('get', `/v1/webhooks/${created.body.id as string}`).expect(200)).body;
              expect(stored.url).toBe(parsed(createText, 'url'));
              expect(stored.events).toEqual(parsed(createText, 'events'));
              await org.request('delete', `/v1/webhooks/${created.body.id as string}`).expect(204);
            }
            const patchText = bodyText(patch);
            const patched = await send('patch', `/v1/webhooks/${endpointId}`, patchText);
            expectWellFormed(patched, patchText);
            if (patched.status >= 300) return;
            const stored = (await org.request('get', `/v1/webhooks/${endpointId}`).expect(200)).body;
            for (const field of ['url', 'events', 'enabled'] as const) {
              const sent = parsed(patchText, field);
              if (sent !== undefined) expect(stored[field]).toEqual(sent);
            }
          },
        ),
        runs,
      );
    },
    TIMEOUT_MS,
  );

  it(
    'POST /v1/audit/exports',
    async () => {
      const instant = fc.oneof(
        fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
        fc.constantFrom('0000-01-01', '0001-01-01', '9999-12-31', '2026-02-30', '2026-01-01T00:00:00+14:00'),
        hostileString,
      );
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            from: optional(stringField(instant)),
            to: optional(stringField(instant)),
            type: optional(stringField(fc.constantFrom('approval.created', 'policy.updated', 'nope'))),
            action: optional(stringField(word)),
            agent: optional(stringField(word)),
          }),
          async (fields) => {
            const text = bodyText(fields);
            const answer = await send('post', '/v1/audit/exports', text);
            expectWellFormed(answer, text);
            if (answer.status >= 300) return;
            const stored = (await org.request('get', `/v1/audit/exports/${answer.body.id as string}`).expect(200)).body;
            for (const field of ['type', 'action', 'agent'] as const) expect(stored.filters[field]).toBe(parsed(text, field));
          },
        ),
        runs,
      );
    },
    TIMEOUT_MS,
  );

  it(
    'POST /v1/members, PATCH /v1/members/:id, POST /v1/keys, POST /v1/session, POST /v1/invites/accept and /preview, POST /v1/policies/:key/evaluate',
    async () => {
      const role = stringField(fc.constantFrom('admin', 'reviewer', 'viewer'));
      const name = optional(stringField(word));
      let serial = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.record({ email: stringField(fc.constant('fuzz@example.com')), role, name }),
          fc.record({ role: optional(role), name }),
          fc.record({
            name,
            scopes: fc.oneof(
              { weight: 3, arbitrary: fc.constant({ kind: 'array', items: [str('approvals:read')] } as JsonTree) },
              hostileValue,
            ),
          }),
          fc.record({ email: stringField(fc.constant('fuzz@example.com')), password: stringField(word) }),
          fc.record({ token: stringField(word), password: stringField(fc.constant('long enough password')), name }),
          fc.record({
            action: stringField(word),
            payload: hostileValue,
            agent: optional(stringField(word)),
            context: optional(hostileValue),
          }),
          async (member, memberPatch, key, signIn, invite, trial) => {
            const memberText = bodyText(member).replace('fuzz@example.com', `fuzz-${serial++}@example.com`);
            const created = await send('post', '/v1/members', memberText);
            expectWellFormed(created, memberText);
            if (created.status < 300) {
              const listed = (await org.request('get', '/v1/members').expect(200)).body.members as { id: string; name: string | null }[];
              const sentName = parsed(memberText, 'name') as string | undefined;
              expect(listed.find((entry) => entry.id === (created.body.member as { id: string }).id)?.name).toBe(sentName?.trim() ?? null);
            }
            for (const [method, path, text] of [
              ['patch', `/v1/members/${memberId}`, bodyText(memberPatch)],
              ['post', '/v1/keys', bodyText(key)],
              ['post', '/v1/session', bodyText(signIn)],
              ['post', '/v1/invites/accept', bodyText(invite)],
              ['post', '/v1/invites/preview', bodyText({ token: invite.token })],
              ['post', '/v1/policies/p/evaluate', bodyText(trial)],
            ] as const) {
              expectWellFormed(await send(method, path, text), text);
            }
          },
        ),
        { ...runs, numRuns: Math.ceil(RUNS / 4) },
      );
    },
    TIMEOUT_MS,
  );
});
