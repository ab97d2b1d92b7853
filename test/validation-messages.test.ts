import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { useTestEnv, type TestEnv, type TestOrg } from './support/test-env.js';

let env: TestEnv;
let org: TestOrg;
let approvalId: string;
let endpointId: string;

useTestEnv((created) => ({ env, org } = created));

/** Messages that read like the validation library rather than like the API. */
const LIBRARY_WORDING = /Invalid input|Invalid option|expected \w+, received|Too (small|big)|received undefined|NaN|>=|<=/;

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

async function errorsOf(method: Method, path: string, body?: unknown): Promise<{ path: string; message: string }[]> {
  const request = org.request(method, path);
  const res = await (body === undefined ? request : request.send(body as object)).expect(422);
  for (const error of res.body.errors) expect(error.message).not.toMatch(LIBRARY_WORDING);
  return res.body.errors;
}

describe('validation messages are sentences naming the field', () => {
  it('POST /v1/approvals: missing fields, wrong types and lengths', async () => {
    expect(await errorsOf('post', '/v1/approvals', { action: 'refund' })).toEqual([
      { path: 'payload', message: 'payload is required and must be an object' },
      { path: 'policyKey', message: 'policyKey is required and must be a string of 1 to 200 characters' },
    ]);
    expect(
      await errorsOf('post', '/v1/approvals', { action: '', payload: [1], policyKey: 7, context: 'why', agent: 'a'.repeat(201) }),
    ).toEqual([
      { path: 'action', message: 'action must be a string of 1 to 200 characters' },
      { path: 'payload', message: 'payload must be an object' },
      { path: 'policyKey', message: 'policyKey must be a string of 1 to 200 characters' },
      { path: 'context', message: 'context must be an object' },
      { path: 'agent', message: 'agent must be a string of 1 to 200 characters' },
    ]);
  });

  it('GET /v1/approvals/:id?wait=: one sentence for not a number, not an integer and out of range', async () => {
    approvalId = (await org.request('post', '/v1/approvals').send({ action: 'x', payload: {}, policyKey: 'none' }).expect(201)).body.id;
    for (const wait of ['soon', '1.5', '0', '31', '']) {
      expect(await errorsOf('get', `/v1/approvals/${approvalId}?wait=${wait}`)).toEqual([
        { path: 'wait', message: 'wait must be an integer from 1 to 30' },
      ]);
    }
  });

  it('POST /v1/approvals/:id/decision: the verdict options and the feedback limit', async () => {
    expect(await errorsOf('post', `/v1/approvals/${approvalId}/decision`, {})).toEqual([
      { path: 'verdict', message: "verdict is required and must be one of 'approved', 'rejected' or 'changes_requested'" },
    ]);
    expect(await errorsOf('post', `/v1/approvals/${approvalId}/decision`, { verdict: 'ok', feedback: 'f'.repeat(5001) })).toEqual([
      { path: 'verdict', message: "verdict must be one of 'approved', 'rejected' or 'changes_requested'" },
      { path: 'feedback', message: 'feedback must be a string of at most 5000 characters' },
    ]);
  });

  it('PUT /v1/policies/:key: nested rule fields by their path, bounds and unknown fields', async () => {
    expect(
      await errorsOf('put', '/v1/policies/p', {
        rules: [{ when: '', outcome: 'deny' }],
        timeoutSeconds: 1.5,
        onTimeout: 'retry',
        timeout: 5,
      }),
    ).toEqual([
      { path: 'rules.0.when', message: 'rules.0.when must be a string of 1 to 4096 characters' },
      { path: 'rules.0.outcome', message: "rules.0.outcome must be 'allow' or 'review'" },
      { path: 'timeoutSeconds', message: 'timeoutSeconds must be an integer from 1 to 2592000' },
      { path: 'onTimeout', message: "onTimeout must be 'expire' or 'escalate'" },
      { path: 'timeout', message: 'timeout is not a known field' },
    ]);
    expect(await errorsOf('put', '/v1/policies/p', { rules: 'all' })).toEqual([
      { path: 'rules', message: 'rules must be an array of at most 100 items' },
    ]);
  });

  it('GET /v1/audit: query parameters, including digits-only integers and dates', async () => {
    expect(await errorsOf('get', '/v1/audit?limit=lots&after=-1&from=yesterday&format=xml&verify=yes&agnet=bot')).toEqual([
      { path: 'from', message: 'from must be an ISO 8601 date-time (with Z or an offset) or a date (YYYY-MM-DD)' },
      { path: 'after', message: 'after must be an integer of at least 0' },
      { path: 'limit', message: 'limit must be an integer from 1 to 1000' },
      { path: 'format', message: "format must be 'json' or 'csv'" },
      { path: 'verify', message: "verify must be 'true' or 'false'" },
      { path: 'agnet', message: 'agnet is not a known field' },
    ]);
    expect(await errorsOf('get', '/v1/audit?limit=5000')).toEqual([{ path: 'limit', message: 'limit must be an integer from 1 to 1000' }]);
  });

  it('POST and PATCH /v1/webhooks: required fields, the url guard, event types and duplicates', async () => {
    expect(await errorsOf('post', '/v1/webhooks', {})).toEqual([
      { path: 'url', message: 'url is required and must be a string of at most 2048 characters' },
      { path: 'events', message: 'events is required and must be an array of at least 1 item' },
    ]);
    expect(
      await errorsOf('post', '/v1/webhooks', { url: 'ftp://hooks.test/x', events: ['approval.approved', 'approval.approved'] }),
    ).toEqual([
      { path: 'url', message: 'url must use http or https' },
      { path: 'events.1', message: "events lists 'approval.approved' more than once" },
    ]);
    endpointId = (
      await org
        .request('post', '/v1/webhooks')
        .send({ url: 'http://127.0.0.1:9/x', events: ['approval.approved'] })
        .expect(201)
    ).body.id;
    expect(await errorsOf('patch', `/v1/webhooks/${endpointId}`, {})).toEqual([
      { path: 'body', message: 'body must set at least one of url, events or enabled' },
    ]);
    expect(await errorsOf('patch', `/v1/webhooks/${endpointId}`, { enabled: 'yes', events: ['approval.decided'] })).toEqual([
      {
        path: 'events.0',
        message:
          "events.0 must be one of 'approval.approved', 'approval.rejected', 'approval.expired', 'approval.escalated', 'approval.orphaned', 'approval.changes_requested', 'approval.revised' or 'audit.checkpoint'",
      },
      { path: 'enabled', message: 'enabled must be true or false' },
    ]);
    expect(await errorsOf('get', `/v1/webhooks/${endpointId}/deliveries?limit=ten`)).toEqual([
      { path: 'limit', message: 'limit must be an integer from 1 to 100' },
    ]);
  });

  it('names a body that is not an object', async () => {
    expect(await errorsOf('post', '/v1/approvals', [1, 2])).toEqual([{ path: 'body', message: 'body must be an object' }]);
  });
});

describe('configuration messages', () => {
  it('name each bad variable in a sentence of its own', () => {
    let message = '';
    try {
      loadConfig({ PORT: 'eighty', DATABASE_URL: 'nowhere', FREE_TIER_MONTHLY_APPROVALS: '-1', LOG_LEVEL: 'loud' });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      message = (error as Error).message;
    }
    expect(message.split('\n')).toEqual([
      'Invalid environment configuration:',
      '  PORT must be an integer from 0 to 65535',
      '  DATABASE_URL must be a URL',
      "  LOG_LEVEL must be one of 'fatal', 'error', 'warn', 'info', 'debug', 'trace' or 'silent'",
      '  FREE_TIER_MONTHLY_APPROVALS must be an integer of at least 0',
    ]);
  });
});
