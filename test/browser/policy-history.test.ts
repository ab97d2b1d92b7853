import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchBrowser, overflowsHorizontally, screenshot, seriousAccessibilityViolations, signIn } from '../support/browser.js';
import { createMember, type TestMember } from '../support/members.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';

let env: TestEnv;
let browser: Browser;

beforeAll(async () => {
  [env, browser] = await Promise.all([createTestEnv({ CONSOLE_DIR: inject('consoleDir') }), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await env?.close();
});

/** Up to 10 allowed at once, over 100 sent to review, and between the two the default: review. */
const POLICY = {
  rules: [
    { when: 'payload.amount <= 10', outcome: 'allow' },
    { when: 'payload.amount > 100', outcome: 'review' },
  ],
};
/** The same with a tighter threshold: an amount of 8 goes to review. */
const TIGHTER = { rules: [{ when: 'payload.amount <= 6', outcome: 'allow' }, POLICY.rules[1]] };

async function organization(): Promise<{ org: TestOrg; admin: TestMember; viewer: TestMember }> {
  const org = await env.createOrg();
  await org.request('put', '/v1/policies/refunds').send(POLICY).expect(200);
  const [admin, viewer] = await Promise.all([createMember(env, org, 'admin'), createMember(env, org, 'viewer')]);
  return { org, admin, viewer };
}

/** A request under `refunds` (approved at once or pending, as the policy says); its id. */
async function ask(org: TestOrg, action: string, amount: number): Promise<string> {
  const created = await org.request('post', '/v1/approvals').send({ action, payload: { amount }, policyKey: 'refunds' });
  expect([200, 201]).toContain(created.status);
  return created.body.id as string;
}

async function storedPolicy(org: TestOrg) {
  return (await org.request('get', '/v1/policies/refunds').expect(200)).body;
}

async function openPolicy(page: Page) {
  await page.goto('/console/policies/refunds');
  await page.getByLabel('Rule 0 condition (CEL)').waitFor();
}

describe('policy versions', () => {
  it('lists every version with who stored it, by email for a member, and shows the lines that changed between any two', async () => {
    const { org, admin } = await organization();
    await admin
      .request('put', '/v1/policies/refunds')
      .send({ ...POLICY, quorum: 2 })
      .expect(200);
    await org
      .request('put', '/v1/policies/refunds')
      .send({ ...TIGHTER, quorum: 2 })
      .expect(200);
    const { context, page } = await signIn(browser, env, admin);
    await openPolicy(page);
    const versions = page.getByRole('region', { name: 'Versions' });
    await versions.getByRole('cell', { name: '3 (current)' }).waitFor();
    const rows = await versions.locator('tbody tr').allInnerTexts();
    expect(rows.map((row) => row.split('\t')[0])).toEqual(['3 (current)', '2', '1']);
    expect(rows[0]).toContain(`API key ${org.keyId.slice(0, 8)}`);
    expect(rows[1]).toContain(admin.email);

    // By default, the latest change: the rule's threshold, line by line.
    const latest = page.getByLabel('From version 2 to version 3, line by line');
    expect(await latest.locator('del').allTextContents()).toEqual(['-       "when": "payload.amount <= 10"']);
    expect(await latest.locator('ins').allTextContents()).toEqual(['+       "when": "payload.amount <= 6"']);

    // Any two versions: the first against the current one shows both changes.
    await page.getByLabel('Compare version').selectOption('1');
    const whole = page.getByLabel('From version 1 to version 3, line by line');
    expect(await whole.locator('ins').allTextContents()).toEqual(['+   "quorum": 2,', '+       "when": "payload.amount <= 6"']);
    await screenshot(page, 'policy-versions');

    await versions.getByRole('button', { name: 'Show the changes in version 2' }).click();
    const second = page.getByLabel('From version 1 to version 2, line by line');
    expect(await second.locator('del').allTextContents()).toEqual(['-   "quorum": 1,']);

    // Saving from the editor adds the next version at once.
    await page.getByLabel('Timeout (seconds)').fill('7200');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await versions.getByRole('cell', { name: '4 (current)' }).waitFor();
    await versions.getByRole('button', { name: 'Show the changes in version 4' }).click();
    const fourth = page.getByLabel('From version 3 to version 4, line by line');
    expect(await fourth.locator('ins').allTextContents()).toEqual(['+   "timeoutSeconds": 7200']);
    await context.close();
  });
});

describe('policy replay', () => {
  it("replays the draft against the key's requests before saving: counts of what would change, examples linking to the requests", async () => {
    const { org, admin } = await organization();
    await ask(org, 'refund-small', 5);
    const eight = await ask(org, 'refund-eight', 8);
    await ask(org, 'refund-middle', 50);
    await ask(org, 'refund-large', 500);
    const { context, page } = await signIn(browser, env, admin);
    await openPolicy(page);
    const replay = page.getByRole('form', { name: 'Replay against past requests' });

    // A draft the server cannot evaluate is marked on its rule, as trying or saving it would be.
    await page.getByLabel('Rule 0 condition (CEL)').fill('payload.amount <=');
    await replay.getByRole('button', { name: 'Replay the draft' }).click();
    await page
      .locator('#rule-0-error')
      .getByText(/^Rule 0 does not compile/)
      .waitFor();
    await replay.getByText('The server cannot replay the draft as it is').waitFor();

    // The stored policy changes nothing; the tighter draft sends the request of 8 to review.
    await page.getByLabel('Rule 0 condition (CEL)').fill('payload.amount <= 10');
    await replay.getByRole('button', { name: 'Replay the draft' }).click();
    await replay.getByText('Of 4 requests, 0 would get another outcome and 4 the same.').waitFor();
    await page.getByLabel('Rule 0 condition (CEL)').fill('payload.amount <= 6');
    await replay.getByRole('button', { name: 'Replay the draft' }).click();
    await replay.getByText('Of 4 requests, 1 would get another outcome and 3 the same.').waitFor();
    expect(await replay.getByRole('region', { name: 'Outcomes that would change' }).locator('tbody tr').allInnerTexts()).toEqual([
      'allow\treview\t1',
    ]);
    const example = replay.getByRole('listitem');
    expect(await example.allInnerTexts()).toEqual([
      `Request ${eight.slice(0, 8)}: was allow, would be review (no rule matched, the default applied)`,
    ]);
    await screenshot(page, 'policy-replay');

    // A range that ends before the requests were made replays none of them.
    await replay.getByLabel('Requests created until (optional)').fill('2020-01-01T00:00');
    await replay.getByRole('button', { name: 'Replay the draft' }).click();
    await replay.getByText('No request was made under this key in that range.').waitFor();
    // More than a replay may take is the API's refusal, naming the field.
    await replay.getByLabel('Requests created until (optional)').fill('');
    await replay.getByLabel(/^At most this many of the newest requests/).fill('10001');
    await replay.getByRole('button', { name: 'Replay the draft' }).click();
    await replay.getByRole('alert').getByText(/limit/).waitFor();

    // Nothing was stored by replaying; the example links to its request.
    expect(await storedPolicy(org)).toMatchObject({ version: 1, rules: POLICY.rules });
    await replay.getByLabel(/^At most this many of the newest requests/).fill('1000');
    await replay.getByRole('button', { name: 'Replay the draft' }).click();
    await replay.getByRole('link', { name: `Request ${eight.slice(0, 8)}` }).click();
    await page.getByRole('heading', { name: 'refund-eight' }).waitFor();
    await context.close();
  });
});

describe('shadow policies', () => {
  it('sets the draft as the shadow, summarises the disagreements of the requests since, keeps it when the rules are saved, and removes it', async () => {
    const { org, admin } = await organization();
    const { context, page } = await signIn(browser, env, admin);
    await openPolicy(page);
    const shadow = page.getByRole('region', { name: 'Shadow policy' });
    await shadow.getByText('No shadow is set.').waitFor();

    await page.getByLabel('Rule 0 condition (CEL)').fill('payload.amount <= 6');
    await shadow.getByRole('button', { name: 'Set the draft as the shadow' }).click();
    await shadow.getByText(/: 0 requests evaluated, 0 with the same outcome\.$/).waitFor();
    expect(await storedPolicy(org)).toMatchObject({ version: 2, rules: POLICY.rules, shadow: { rules: TIGHTER.rules } });
    const differs = shadow.getByLabel('How the shadow differs from the policy, line by line');
    expect(await differs.locator('ins').allTextContents()).toEqual(['+       "when": "payload.amount <= 6"']);
    // The draft is still the one edited; the live rules are the stored ones.
    expect(await page.getByLabel('Rule 0 condition (CEL)').inputValue()).toBe('payload.amount <= 6');

    await ask(org, 'refund-small', 5);
    const eight = await ask(org, 'refund-eight', 8);
    await ask(org, 'refund-large', 500);
    await shadow.getByRole('button', { name: 'Refresh the summary' }).click();
    await shadow.getByText(/: 3 requests evaluated, 2 with the same outcome\.$/).waitFor();
    expect(await shadow.getByRole('region', { name: 'Disagreements' }).locator('tbody tr').allInnerTexts()).toEqual(['allow\treview\t1']);
    const disagreements = shadow.getByRole('list', { name: 'Requests they disagreed on, newest first' }).getByRole('listitem');
    expect(await disagreements.allInnerTexts()).toEqual([
      expect.stringMatching(new RegExp(`^Request ${eight.slice(0, 8)}: the policy said allow, the shadow review \\(`)),
    ]);
    expect(await disagreements.getByRole('link').getAttribute('href')).toBe(`/console/approvals/${eight}`);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, 'policy-shadow');
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await overflowsHorizontally(page)).toBe(false);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, 'policy-shadow-phone');
    await page.setViewportSize({ width: 1200, height: 900 });

    // A shadow whose rule does not compile is refused, and marked on the rule.
    await page.getByLabel('Rule 0 condition (CEL)').fill('payload.amount <=');
    await shadow.getByRole('button', { name: 'Replace the shadow with the draft' }).click();
    await page
      .locator('#rule-0-error')
      .getByText(/^Rule 0 does not compile/)
      .waitFor();
    await shadow.getByText('The server refused the draft as a shadow').waitFor();

    // Saving the rules keeps the shadow, and its summary.
    await page.getByLabel('Rule 0 condition (CEL)').fill('payload.amount <= 10');
    await page.getByLabel('Timeout (seconds)').fill('7200');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText('Saved.').waitFor();
    expect(await storedPolicy(org)).toMatchObject({ version: 3, timeoutSeconds: 7200, shadow: { rules: TIGHTER.rules } });
    await shadow.getByText(/: 3 requests evaluated, 2 with the same outcome\.$/).waitFor();

    await shadow.getByRole('button', { name: 'Remove the shadow' }).click();
    await shadow.getByText('No shadow is set.').waitFor();
    expect(await storedPolicy(org)).toMatchObject({ version: 4, timeoutSeconds: 7200, shadow: null });
    await context.close();
  });
});

describe('a viewer', () => {
  it('reads the versions, the shadow and a replay, but has no control that changes the policy, and the API refuses the change it tries', async () => {
    const { org, viewer } = await organization();
    await org
      .request('put', '/v1/policies/refunds')
      .send({ ...POLICY, shadow: TIGHTER })
      .expect(200);
    await ask(org, 'refund-eight', 8);
    await org.request('put', '/v1/policies/payouts').send(POLICY).expect(200);
    const { context, page } = await signIn(browser, env, viewer);
    // The list says which policies have a shadow, and at which version each is.
    await page.getByRole('link', { name: 'Policies' }).click();
    const list = page.getByRole('region', { name: 'Policies' });
    await list.getByRole('link', { name: 'refunds' }).waitFor();
    const cells = async (key: string) =>
      (await list.getByRole('row').filter({ hasText: key }).getByRole('cell').allInnerTexts()).slice(0, 6);
    expect(await cells('payouts')).toEqual(['payouts', '2', 'review', '1 h, then expire', '1', '—']);
    expect(await cells('refunds')).toEqual(['refunds', '2', 'review', '1 h, then expire', '2', 'set']);
    await openPolicy(page);
    await page.getByRole('region', { name: 'Versions' }).getByRole('cell', { name: '2 (current)' }).waitFor();
    const shadow = page.getByRole('region', { name: 'Shadow policy' });
    await shadow.getByText(/: 1 request evaluated, 0 with the same outcome\.$/).waitFor();
    const replay = page.getByRole('form', { name: 'Replay against past requests' });
    await replay.getByRole('button', { name: 'Replay the draft' }).click();
    await replay.getByText('Of 1 request, 0 would get another outcome and 1 the same.').waitFor();
    expect(
      await page
        .getByRole('button', { name: /Save policy|Delete policy|Set the draft as the shadow|Replace the shadow|Remove the shadow/ })
        .count(),
    ).toBe(0);

    const refused = await page.evaluate(async () => {
      const { csrfToken } = (await (await fetch('/v1/session')).json()) as { csrfToken: string };
      const response = await fetch('/v1/policies/refunds', {
        method: 'PUT',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
        body: JSON.stringify({ rules: [], shadow: null }),
      });
      return { status: response.status, code: ((await response.json()) as { code: string }).code };
    });
    expect(refused).toEqual({ status: 403, code: 'forbidden' });
    expect(await storedPolicy(org)).toMatchObject({ version: 2, rules: POLICY.rules, shadow: { rules: TIGHTER.rules } });
    await context.close();
  });
});
