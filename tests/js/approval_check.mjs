// Approvals on Nova's web page in Debian's headless chromium: send the demo task, press "Allow for
// session" on the first question and "Deny" on the edit, then read what the page shows, live and after
// the session is opened again from its record. Prints one JSON object for the Python test to judge.
//
//   node approval_check.mjs <base-url> <token> <prompt> <screenshot.png> <profile-dir>
import { chromium } from 'playwright-core';

import { runCheck } from './browser.mjs';

const [base, token, prompt, screenshot, profile] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1280, height: 860 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const result = { consoleErrors: [], questions: [] };
const waiting = '.approval:not([data-state])';
await runCheck(context, result, async () => {
  const page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') result.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => result.consoleErrors.push(String(e)));
  await page.goto(`${base}/?token=${encodeURIComponent(token)}`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 15000 });
  await page.fill('#prompt', prompt);
  await page.click('#send');
  for (const decision of ['session', 'deny']) {
    const box = page.locator(waiting).first();
    await box.waitFor({ timeout: 60000 });
    result.questions.push({
      what: await box.locator('.approval-what').textContent(),
      why: await box.locator('.approval-why').first().textContent(),
      buttons: await box.locator('button').allTextContents(),
      sessionTitle: await box.locator('button[data-decision="session"]').getAttribute('title'),
    });
    await box.locator(`button[data-decision="${decision}"]`).click();
    await page.waitForSelector(`.approval[data-state="answered"][data-decision="${decision}"]`, { timeout: 30000 });
  }
  await page.waitForSelector('body[data-busy="false"]', { timeout: 60000 });
  result.unanswered = await page.locator(waiting).count();
  result.answers = await page.locator('.approval-answer').allTextContents();
  result.deniedLive = await page.locator('details.tool.denied summary').allTextContents();
  result.assistantText = await page.locator('.msg.assistant .text').allTextContents();
  await page.screenshot({ path: screenshot, fullPage: false });
  // Opened again from the record: the denied call is still marked denied.
  result.sessionId = await page.getAttribute('#sessions li.active', 'data-id');
  await page.locator('#new-session').click();
  await page.waitForFunction(() => document.querySelectorAll('details.tool').length === 0, null, { timeout: 10000 });
  await page.locator(`#sessions li[data-id="${result.sessionId}"]`).click();
  await page.waitForSelector('details.tool', { timeout: 10000 });
  result.deniedRecorded = await page.locator('details.tool.denied summary').allTextContents();
});
