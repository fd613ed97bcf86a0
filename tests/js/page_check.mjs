// Drives Nova's web page in Debian's headless chromium: open it with the token link, send a message,
// wait for the streamed answer and the "compacting…" indicator, read the bar, take a screenshot.
// Prints one JSON object for the Python test to judge.
//
//   node page_check.mjs <base-url> <token> <prompt> <expected-answer-text> <screenshot.png> <profile-dir>
import { chromium } from 'playwright-core';

const [base, token, prompt, expected, screenshot, profile] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1280, height: 860 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const result = { consoleErrors: [], requests: [] };
try {
  const page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') result.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => result.consoleErrors.push(String(e)));
  page.on('request', (r) => result.requests.push(r.url()));
  await page.goto(`${base}/?token=${encodeURIComponent(token)}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 15000 });
  result.addressBar = page.url();
  await page.fill('#prompt', prompt);
  await page.click('#send');
  await page.waitForSelector('#compacting:not([hidden])', { timeout: 60000 });
  result.sawCompacting = true;
  await page.waitForFunction(
    (text) => [...document.querySelectorAll('.msg.assistant .text')].some((n) => n.textContent.includes(text)),
    expected, { timeout: 60000 });
  await page.waitForSelector('body[data-busy="false"]', { timeout: 60000 });
  // The bar after the turn, once the page has re-read the context endpoint.
  await page.waitForTimeout(300);
  result.barPercent = await page.textContent('#ctx-percent');
  result.barLevel = await page.getAttribute('#context-bar', 'class');
  result.sessionId = await page.getAttribute('#sessions li.active', 'data-id');
  result.toolCalls = await page.locator('details.tool').count();
  result.assistantText = await page.locator('.msg.assistant .text').allTextContents();
  await page.click('#toggle-context');
  await page.waitForSelector('#segments tr', { timeout: 10000 });
  result.segmentRows = await page.locator('#segments tr').count();
  await page.locator('details.tool').first().click();  // a collapsible tool call opens
  result.firstToolOpen = await page.locator('details.tool').first().evaluate((d) => d.open);
  await page.screenshot({ path: screenshot, fullPage: false });
  result.ok = true;
} catch (error) {
  result.error = String(error && error.stack || error);
} finally {
  await context.close();
}
console.log(JSON.stringify(result));
