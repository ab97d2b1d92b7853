import express, { type ErrorRequestHandler, type Express, type Response } from 'express';
import { z } from 'zod';
import type { DecisionLinkService } from '../../modules/links/decision-link-service.js';
import { consoleUrl } from '../../modules/notifications/approval-notice.js';
import { failurePage, inspectionPage, invalidFormPage, LINK_PAGE_HEADERS, outcomePage, type LinkPage } from './link-pages.js';

/** The confirmation form as the page posts it. */
const confirmationSchema = z.object({
  nonce: z.string().max(200).default(''),
  feedback: z.string().max(5000, 'Feedback is limited to 5,000 characters.').optional(),
});

function send(res: Response, page: LinkPage): void {
  res.status(page.status).set(LINK_PAGE_HEADERS).send(page.body);
}

/**
 * Decision links (contract C11), served as HTML pages by the web process: GET shows the request
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
