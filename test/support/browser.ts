import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { TestEnv } from './test-env.js';

/** Debian's Chromium (`apt-get install chromium`); playwright cannot download browsers here. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Headless, and quiet: without the background-networking flags Chromium keeps trying to reach Google. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
];

/** A browser with a fresh profile (playwright gives each launch its own user-data-dir). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** Steps fail after this, well inside the test's own timeout, so a failure names the step that waited. */
const STEP_TIMEOUT_MS = 10_000;

/**
 * Loading a page (its bundle parsed and run) is what a loaded two-core machine slows most: the API
 * reference's bundle is megabytes. Navigations get this budget, still inside the tests' own.
 */
export const PAGE_LOAD_TIMEOUT_MS = 45_000;

/** A fresh browser context (cookies, storage) on the test app. */
export async function openContext(browser: Browser, env: TestEnv, viewport = { width: 1200, height: 900 }): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL: env.baseUrl, viewport });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  context.setDefaultNavigationTimeout(PAGE_LOAD_TIMEOUT_MS);
  return context;
}

/** A signed-in tab for `member`, through the console's own sign-in form. */
export async function signIn(
  browser: Browser,
  env: TestEnv,
  member: { email: string; password: string },
  viewport = { width: 1200, height: 900 },
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await openContext(browser, env, viewport);
  const page = await context.newPage();
  await page.goto('/console/');
  await page.getByLabel('Email').fill(member.email);
  await page.getByLabel('Password').fill(member.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Inbox' }).waitFor();
  return { context, page };
}

/**
 * Controls (and other named roles) whose accessible name, as Chromium computes it for assistive
 * technology, is empty.
 */
export async function unnamedControls(page: Page): Promise<string[]> {
  const session = await page.context().newCDPSession(page);
  const { nodes } = (await session.send('Accessibility.getFullAXTree')) as {
    nodes: { ignored: boolean; role?: { value: string }; name?: { value: string } }[];
  };
  await session.detach();
  const named = new Set(['button', 'link', 'textbox', 'checkbox', 'combobox', 'radio', 'switch', 'tab', 'menuitem', 'dialog', 'region']);
  return nodes
    .filter((node) => !node.ignored && named.has(node.role?.value ?? '') && !node.name?.value?.trim())
    .map((node) => node.role!.value);
}

/** Whether the page is wider than the window (a phone would have to scroll sideways). */
export async function overflowsHorizontally(page: Page): Promise<boolean> {
  // A string, evaluated in the page: this file is compiled without the DOM's types.
  return (await page.evaluate('document.documentElement.scrollWidth > window.innerWidth')) as boolean;
}

/**
 * Screenshots for the README, written only when CONSOLE_SCREENSHOTS names a directory
 * (`npm run docs:screenshots`), so test runs leave the tree as it was.
 */
export async function screenshot(page: Page, name: string, { fullPage = true }: { fullPage?: boolean } = {}): Promise<void> {
  const directory = process.env.CONSOLE_SCREENSHOTS;
  if (!directory) return;
  await mkdir(directory, { recursive: true });
  await page.screenshot({ path: path.join(directory, `${name}.png`), fullPage });
}
