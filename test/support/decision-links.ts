import type { TestEnv } from './test-env.js';

/** The links of an approval mail's text: approve, reject, request changes and the console page. */
export function linksOf(text: string): { approve: string; reject: string; requestChanges: string; console: string } {
  const find = (label: string) => new RegExp(`${label}:? +(\\S+)`).exec(text)?.[1] ?? '';
  return {
    approve: find('Approve'),
    reject: find('Reject'),
    requestChanges: find('Request changes'),
    console: find('Open in the console'),
  };
}

/** A link of PUBLIC_URL, reached on the test's own server: its path. */
export function pathOf(link: string): string {
  return new URL(link).pathname;
}

/** The hidden nonce of a confirmation page. */
export function nonceOf(page: string): string {
  return /name="nonce" value="([^"]+)"/.exec(page)?.[1] ?? '';
}

/** Opens a link as a browser does and confirms it on its page, with optional feedback. */
export async function confirmLink(env: TestEnv, link: string, feedback?: string) {
  const page = await env.http.get(pathOf(link));
  return env.http
    .post(pathOf(link))
    .type('form')
    .send({ nonce: nonceOf(page.text), ...(feedback ? { feedback } : {}) });
}
