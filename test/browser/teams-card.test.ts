import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleUrl } from '../../src/modules/notifications/approval-notice.js';
import { approvalCard } from '../../src/modules/teams/teams-cards.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import { createTestEnv, type TestEnv, type TestOrg } from '../support/test-env.js';

const require = createRequire(import.meta.url);
const RENDERER = readFile(require.resolve('adaptivecards/dist/adaptivecards.min.js'), 'utf8');
const RENDERER_CSS = readFile(require.resolve('adaptivecards/dist/adaptivecards.css'), 'utf8');

let env: TestEnv;
let browser: Browser;
let org: TestOrg;

beforeAll(async () => {
  [env, browser] = await Promise.all([createTestEnv(), launchBrowser()]);
  org = await env.createOrg();
  await org.request('put', '/v1/policies/refunds').send({ quorum: 2 }).expect(200);
});
afterAll(async () => {
  await browser?.close();
  await env?.close();
});

/** Renders a card's JSON with Microsoft's Adaptive Cards renderer, as a host would, and answers what it rendered. */
async function render(card: unknown, name: string) {
  const page = await browser.newPage({ viewport: { width: 520, height: 900 } });
  await page.setContent(
    `<html><head><style>${await RENDERER_CSS}</style></head><body style="font-family: sans-serif; margin: 16px; background: #f5f5f5"><div id="card" style="width: 480px; background: #fff"></div></body></html>`,
  );
  await page.addScriptTag({ content: await RENDERER });
  // A string, evaluated in the page: this file is compiled without the DOM's types.
  const rendered = (await page.evaluate(`(() => {
    const card = new AdaptiveCards.AdaptiveCard();
    card.parse(${JSON.stringify(card)});
    const errors = card.validateProperties().validationEvents.filter((event) => event.phase !== undefined && event.event !== undefined).map((event) => event.message);
    document.getElementById('card').appendChild(card.render());
    return { errors, buttons: [...document.querySelectorAll('button')].map((button) => button.textContent.trim()), text: document.getElementById('card').innerText };
  })()`)) as { errors: string[]; buttons: string[]; text: string };
  await screenshot(page, name);
  await page.close();
  return rendered;
}

describe('the Teams card, rendered from its JSON with the Adaptive Cards renderer', () => {
  it('shows the request with Approve, Reject and Request changes while pending, and only the outcome once settled', async () => {
    const { id } = (
      await org
        .request('post', '/v1/approvals')
        .send({
          action: 'refund',
          payload: { amount: 250, currency: 'EUR', customer: 'cus_8812' },
          policyKey: 'refunds',
          agent: 'billing-bot',
        })
        .expect(201)
    ).body;
    const pending = (await env.services.approvals.findForNotice(org.orgId, id))!.approval;
    const url = consoleUrl(env.config.PUBLIC_URL, id);
    const open = await render(approvalCard(pending, url), 'teams-card');
    expect(open.buttons).toEqual(['Approve', 'Reject', 'Request changes', 'Open in console']);
    expect(open.text).toContain('Approval needed: refund');
    expect(open.text).toContain('billing-bot');
    expect(open.text).toContain('"currency": "EUR"');

    await org
      .asReviewer('post', `/v1/approvals/${id}/decision`)
      .send({ verdict: 'rejected', feedback: 'refunds above 200 need a manager' })
      .expect(200);
    const settled = (await env.services.approvals.findForNotice(org.orgId, id))!.approval;
    const closed = await render(approvalCard(settled, url), 'teams-card-settled');
    expect(closed.buttons).toEqual(['Open in console']);
    expect(closed.text).toContain('Rejected by API key');
    expect(closed.text).toContain('refunds above 200 need a manager');
  });
});
