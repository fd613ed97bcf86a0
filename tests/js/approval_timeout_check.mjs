// An approval nobody answers, in Debian's headless chromium: send the demo task and answer nothing;
// read each card as its time runs out, then the conversation once the turn is over. Prints one JSON
// object for the Python test to judge.
//
//   node approval_timeout_check.mjs <base-url> <token> <prompt> <profile-dir>
import { openPage, runCheck } from './browser.mjs';

const [base, token, prompt, profile] = process.argv.slice(2);
const result = {};
const { context, page, consoleErrors } = await openPage(base, token, profile);
result.consoleErrors = consoleErrors;
await runCheck(context, result, async () => {
  await page.fill('#prompt', prompt);
  await page.click('#send');
  await page.waitForSelector('.approval', { timeout: 60000 });
  await page.waitForSelector('body[data-busy="false"]', { timeout: 60000 });
  result.cards = await page.locator('.approval').count();
  result.answers = await page.locator('.approval-answer').allTextContents();
  result.deadlinesLeft = await page.locator('.approval-deadline').count();
  result.buttonsLeft = await page.locator('.approval button').count();
  result.deniedOutputs = await page.locator('details.tool.denied pre.output').allTextContents();
});
