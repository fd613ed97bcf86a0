// Debian's chromium, headless, signed in to Nova's page: what the page checks share.
//
//   const { context, page, consoleErrors } = await openPage(base, token, profile);
import { chromium } from 'playwright-core';

export async function openPage(base, token, profile, viewport = { width: 1280, height: 900 }) {
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    viewport,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const consoleErrors = [];
  const page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  await page.goto(`${base}/?token=${encodeURIComponent(token)}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 15000 });
  return { context, page, consoleErrors };
}

// Runs a check's steps, then prints `result` as one JSON line for the Python test to judge: `ok` when
// every step ran, else `error` with where it failed; the browser is closed either way.
//
//   await runCheck(context, result, async () => { ... });
export async function runCheck(context, result, steps) {
  try {
    await steps();
    result.ok = true;
  } catch (error) {
    result.error = String(error && error.stack || error);
  } finally {
    await context.close();
  }
  console.log(JSON.stringify(result));
}
