/**
 * Browser tests: Debian's Chromium driven by playwright-core (never a downloaded browser).
 *
 *   Deno.test(browserTest("checkout pays", async (t) => {
 *     const browser = await launchBrowser();
 *     const page = await browser.newPage();
 *     const problems = watchPage(page);
 *     ...
 *     await screenshot(page, "checkout-paid");
 *   }));
 *
 * Where no Chromium is installed (`CHROMIUM_PATH`, default /usr/bin/chromium) the test is
 * ignored with a console line saying so (DESIGN §10), so a fresh machine still passes.
 *
 * Secure cookies: the service marks cookies Secure unless APP_ENV=development, and tests run
 * with APP_ENV=test over plain http. Chromium treats http://127.0.0.1 and http://localhost as
 * secure contexts and stores and sends Secure cookies to them (checked with headless Chromium
 * 156), so the default test service (BASE_URL http://127.0.0.1:<port>) works as it is: no
 * development mode and no special host are needed.
 */
import { type Browser, chromium, type Page } from "playwright-core";

export const CHROMIUM_PATH = Deno.env.get("CHROMIUM_PATH") ?? "/usr/bin/chromium";

export const CHROMIUM_ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export const SCREENSHOT_DIR = new URL("../../test-output/screenshots/", import.meta.url);

/** Is there a Chromium to drive? */
export function browserAvailable(): boolean {
  try {
    return Deno.statSync(CHROMIUM_PATH).isFile;
  } catch {
    return false;
  }
}

let warned = false;

/**
 * A Deno.test definition for a browser test: ignored (with a clear message) where no Chromium is
 * installed. Sanitizers are off: playwright keeps its pipe to the browser and a few timers
 * between steps, which the test closes itself.
 */
export function browserTest(
  name: string,
  fn: (t: Deno.TestContext) => Promise<void>,
): Deno.TestDefinition {
  const available = browserAvailable();
  if (!available && !warned) {
    warned = true;
    console.warn(
      `browser tests ignored: no Chromium at ${CHROMIUM_PATH} ` +
        "(install Debian's chromium, or set CHROMIUM_PATH)",
    );
  }
  return { name, ignore: !available, sanitizeOps: false, sanitizeResources: false, fn };
}

export async function launchBrowser(): Promise<Browser> {
  return await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

/** A full-page PNG under test-output/screenshots/ (gitignored); returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  await Deno.mkdir(SCREENSHOT_DIR, { recursive: true });
  const safe = name.replace(/[^a-zA-Z0-9._-]+/g, "-");
  const path = new URL(`${safe}.png`, SCREENSHOT_DIR).pathname;
  await page.screenshot({ path, fullPage: true });
  return path;
}

/**
 * Collects what should never happen on our pages: uncaught exceptions, console errors (CSP
 * violations and 4xx/5xx loads among them; pass `ignore` for expected ones) and failed requests.
 * Chromium's automatic /favicon.ico probe is not counted.
 */
export function watchPage(page: Page, opts: { ignore?: RegExp[] } = {}): string[] {
  const problems: string[] = [];
  const ignored = (s: string) => (opts.ignore ?? []).some((r) => r.test(s));
  page.on("pageerror", (e) => {
    const s = `pageerror: ${e.message}`;
    if (!ignored(s)) problems.push(s);
  });
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    // The browser's own favicon probe is not the page's doing.
    if (/\/favicon\.ico(\?|$)/.test(m.location().url)) return;
    const s = `console: ${m.text()}`;
    if (!ignored(s)) problems.push(s);
  });
  page.on("requestfailed", (r) => {
    // An event stream (views/assets/live.js) the page closed, or left, ends as aborted.
    if (isClosedEventStream(r.url(), r.failure()?.errorText)) return;
    // A background GET (htmx's panel refresh) the page cancelled, because it navigated or
    // replaced the panel meanwhile, also ends as aborted: the client's doing, not a failure. A
    // server's failure shows as a console error with its status, or another net:: error.
    if (isCancelledBackgroundGet(r.method(), r.resourceType(), r.failure()?.errorText)) return;
    const s = `requestfailed: ${r.method()} ${r.url()} ${r.failure()?.errorText ?? ""}`;
    if (!ignored(s)) problems.push(s);
  });
  return problems;
}

function isCancelledBackgroundGet(method: string, type: string, error = ""): boolean {
  return method === "GET" && (type === "xhr" || type === "fetch") &&
    /net::ERR_ABORTED/.test(error);
}

function isClosedEventStream(url: string, error = ""): boolean {
  return /net::ERR_ABORTED/.test(error) &&
    /\/(dashboard|checkout\/[\w-]+)\/events(\?|$)/.test(new URL(url).pathname);
}
