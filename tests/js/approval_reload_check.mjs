// A waiting approval outlives the page in Debian's headless chromium: send the demo task, reload the
// page while the first call waits, answer it there; switch to a new session and back while the edit
// waits, read its diff and deadline, approve it; approve the last test run. Prints one JSON object for
// the Python test to judge.
//
//   node approval_reload_check.mjs <base-url> <token> <prompt> <screenshot.png> <profile-dir>
import { openPage, runCheck } from './browser.mjs';

const [base, token, prompt, screenshot, profile] = process.argv.slice(2);
const result = { questions: [] };
const waiting = '.approval:not([data-state])';

// The first question waiting, other than the one answered last (its card may still be settling).
let answered = '';
async function question(page, how) {
  const box = page.locator(answered ? `${waiting}:not([data-call="${answered}"])` : waiting).first();
  await box.waitFor({ timeout: 60000 });
  const diff = box.locator('.approval-diff');
  result.questions.push({
    how,
    what: await box.locator('.approval-what').textContent(),
    deadline: await box.locator('.approval-deadline').textContent(),
    diffAdded: (await diff.count()) ? await diff.locator('.diff-add').allTextContents() : [],
    diffRemoved: (await diff.count()) ? await diff.locator('.diff-del').allTextContents() : [],
    busy: await page.getAttribute('body', 'data-busy'),
  });
  return box;
}

async function answer(box, decision) {
  answered = await box.getAttribute('data-call');
  await box.locator(`button[data-decision="${decision}"]`).click();
}

const { context, page, consoleErrors } = await openPage(base, token, profile);
result.consoleErrors = consoleErrors;
await runCheck(context, result, async () => {
  await page.fill('#prompt', prompt);
  await page.click('#send');
  await question(page, 'live');
  result.sessionId = await page.getAttribute('#sessions li.active', 'data-id');

  // Away to another session and back while the turn's own stream is open: asked again, from the state.
  await page.locator('#new-session').click();
  await page.waitForFunction(() => document.querySelectorAll('.approval').length === 0, null, { timeout: 10000 });
  await page.locator(`#sessions li[data-id="${result.sessionId}"]`).click();
  await question(page, 'back during the stream');

  // Reloaded while the test run waits: the page opens the session again and asks again.
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]', { timeout: 15000 });
  let box = await question(page, 'reloaded');
  result.sendDisabled = await page.locator('#send').isDisabled();
  await answer(box, 'once');

  // The edit waits next; leave the session and come back to it.
  box = await question(page, 'followed');
  await page.locator('#new-session').click();
  await page.waitForFunction(() => document.querySelectorAll('.approval').length === 0, null, { timeout: 10000 });
  result.busyInOtherSession = await page.getAttribute('body', 'data-busy');
  await page.locator(`#sessions li[data-id="${result.sessionId}"]`).click();
  box = await question(page, 'switched back');
  await page.screenshot({ path: screenshot, fullPage: false });
  await answer(box, 'once');

  // The test run after the edit.
  box = await question(page, 'last');
  await answer(box, 'once');
  await page.waitForSelector('body[data-busy="false"]', { timeout: 60000 });
  result.unanswered = await page.locator(waiting).count();
  result.tools = await page.locator('details.tool summary').allTextContents();
  result.denied = await page.locator('details.tool.denied').count();
  result.assistantText = await page.locator('.msg.assistant .text').allTextContents();
});
