import express, { type ErrorRequestHandler, type Express, type Response } from 'express';
import { z } from 'zod';
import type { DecisionLinkService } from '../../modules/links/decision-link-service.js';
import { formBody, htmlContent, type DocumentedOperation } from '../openapi.js';
import { consoleUrl } from '../../modules/notifications/approval-notice.js';
import { failurePage, inspectionPage, invalidFormPage, LINK_PAGE_HEADERS, outcomePage, type LinkPage } from './link-pages.js';

/** The confirmation form as the page posts it. */
const confirmationSchema = z.object({
  nonce: z.string().max(200).default(''),
  feedback: z.string().max(5000, 'Feedback is limited to 5,000 characters.').optional(),
});

const tokenParameter = {
  name: 'token',
  in: 'path',
  required: true,
  description: 'The token of a decision link from an approval mail (256 random bits, base64url).',
  schema: { type: 'string' },
};

const page = (description: string) => ({ description, content: htmlContent });

/** The decision link pages in the OpenAPI document: HTML for people, not JSON. */
export const decisionLinkOperations: DocumentedOperation[] = [
  {
    method: 'get',
    path: '/d/{token}',
    operation: {
      summary: 'Open a decision link: the request and a confirmation form; changes nothing',
      description: 'The token is the credential. Opening the link (as mail scanners do) never decides; only the form does.',
      tags: ['decision links'],
      security: [],
      parameters: [tokenParameter],
      responses: {
        200: page('The request with its confirmation form, or its outcome when it was decided already.'),
        410: page(
          'Unknown token, request expired or escalated, the link was used already, or the request was revised since the link was sent.',
        ),
      },
    },
  },
  {
    method: 'post',
    path: '/d/{token}',
    operation: {
      summary: "Confirm a decision link: the member's vote (approve, reject or request changes), through channel email",
      tags: ['decision links'],
      security: [],
      parameters: [tokenParameter],
      requestBody: formBody(['nonce'], {
        nonce: { maxLength: 200, description: "The hidden nonce of the link's own page." },
        feedback: { maxLength: 5000, description: 'Optional with approve and reject; required with request changes (1-2,000 characters).' },
      }),
      responses: {
        200: page('The vote is recorded: the request is settled, or waits for the rest of its quorum.'),
        403: page('The member may not decide this request; the page says why.'),
        409: page('The request was decided already, or the member voted elsewhere.'),
        410: page(
          'Unknown token, request expired or escalated, the link was used already, or the request was revised since the link was sent.',
        ),
        422: page(
          "The form did not come from the link's page (no valid nonce), could not be read, or asked for changes without feedback (or with more than 2,000 characters); nothing was decided.",
        ),
      },
    },
  },
];

function send(res: Response, page: LinkPage): void {
  res.status(page.status).set(LINK_PAGE_HEADERS).send(page.body);
}

/**
 * Decision links (see docs/members-and-channels.md), served as HTML pages by the web process: GET shows the request
 * and a confirmation form, and changes nothing however often a mail scanner opens it; POST with
 * the page's nonce casts the vote. Every answer, errors included, is a page of its own.
 */
export function mountDecisionLinks(app: Express, links: DecisionLinkService, publicUrl: string): void {
  const urls = { console: (approvalId: string) => consoleUrl(publicUrl, approvalId), inbox: `${publicUrl}/console/` };
  const router = express.Router();
  router.get('/d/:token', async (req, res) => {
    send(res, inspectionPage(await links.inspect(String(req.params.token)), urls));
  });
  router.post('/d/:token', express.urlencoded({ extended: false, limit: '32kb' }), async (req, res) => {
    const form = confirmationSchema.safeParse(req.body ?? {});
    if (!form.success) return send(res, invalidFormPage(form.error.issues[0]!.message));
    send(res, outcomePage(await links.confirm(String(req.params.token), form.data.nonce, form.data.feedback), urls));
  });
  const pageErrors: ErrorRequestHandler = (error: { status?: number }, req, res, _next) => {
    if (typeof error.status === 'number' && error.status < 500) return send(res, invalidFormPage('The form could not be read.'));
    req.log.error({ err: error }, 'decision link failed');
    send(res, failurePage());
  };
  router.use(pageErrors);
  app.use(router);
}
