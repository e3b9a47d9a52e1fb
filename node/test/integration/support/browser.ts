/**
 * A real browser for the dashboard's tests: Debian's chromium (installed by
 * .ci/run) driven by playwright-core, headless, with a fresh profile per
 * context. A missing chromium fails the suite saying how to install it; it
 * never skips. Every page refuses requests to anywhere but the API under
 * test and records them, so a test can assert the dashboard needs no network.
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium, type Page } from "playwright-core";

export const CHROMIUM = process.env.CF_TEST_CHROMIUM ?? "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
export const SCREENSHOTS = path.join(repoRoot, ".screenshots");

export function requireDashboardBuild(): void {
  if (!existsSync(path.join(repoRoot, "dist", "ui", "index.html"))) {
    throw new Error("the dashboard is not built (dist/ui/index.html): run `npm run build`");
  }
}

export interface TestBrowser {
  /** A new browser profile (its own sessionStorage) with one page on it. */
  page(): Promise<Page>;
  /** Requests the pages made to anywhere but `origin` (refused). */
  offOrigin: string[];
  close(): Promise<void>;
}

export async function startBrowser(origin: string): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: apt-get install -y --no-install-recommends chromium (.ci/run does)`,
    );
  }
  requireDashboardBuild();
  await mkdir(SCREENSHOTS, { recursive: true });
  const contexts: Array<{ context: BrowserContext; dir: string }> = [];
  const offOrigin: string[] = [];
  return {
    offOrigin,
    async page() {
      const dir = await mkdtemp(path.join(os.tmpdir(), "cf-chromium-"));
      const context = await chromium.launchPersistentContext(dir, {
        executablePath: CHROMIUM,
        headless: true,
        args: ARGS,
        viewport: { width: 1280, height: 860 },
        timezoneId: "UTC",
      });
      contexts.push({ context, dir });
      await context.route("**/*", (route) => {
        const url = route.request().url();
        if (url.startsWith(origin) || url.startsWith("data:")) return route.continue();
        offOrigin.push(url);
        return route.abort();
      });
      return context.pages()[0] ?? (await context.newPage());
    },
    async close() {
      for (const { context, dir } of contexts) {
        await context.close().catch(() => undefined);
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

/** A screenshot of the page under .screenshots/ (git-ignored). */
export async function screenshot(page: Page, name: string): Promise<string> {
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

export async function signIn(page: Page, baseUrl: string, key: string): Promise<void> {
  await page.goto(`${baseUrl}/ui/`);
  await page.fill("input[name=api-key]", key);
  await page.click("button[type=submit]");
  await page.waitForSelector("header nav");
}
