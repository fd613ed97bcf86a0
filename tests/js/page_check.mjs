// Drives Nova's web page in Debian's headless chromium as a person would: open it without the token
// (a form asks for it), sign in, send a message, wait for the streamed answer and the "compacting…"
// indicator, read the bar, the model and cost, the picture of the context and its table, then open
// /docs in the same browser. Prints one JSON object for the Python test to judge.
//
//   node page_check.mjs <base-url> <token> <prompt> <expected-answer-text> <screenshot.png> <profile-dir>
import { chromium } from 'playwright-core';

import { runCheck } from './browser.mjs';

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
await runCheck(context, result, async () => {
  const page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') result.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => result.consoleErrors.push(String(e)));
  page.on('request', (r) => result.requests.push(r.url()));

  // -- without the token: a form, never JSON -----------------------------------------------------------
  const first = await page.goto(`${base}/`);
  result.loginStatus = first.status();
  result.loginForm = await page.locator('form#login input[name="token"]').count() === 1;
  result.loginIsJson = (await page.textContent('body')).trim().startsWith('{');
  // The 401 the sign-in page answers with is no error of the page's own.
  result.consoleErrors = result.consoleErrors.filter((t) => !t.includes('401'));
  await page.fill('#token', token);
  await Promise.all([page.waitForNavigation(), page.click('form#login button[type="submit"]')]);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 15000 });
  result.addressBar = page.url();

  // -- the sidebar: counts and long titles -------------------------------------------------------------
  result.sidebar = await page.evaluate(() => {
    const bar = document.getElementById('sessions');
    return {
      counts: [...bar.querySelectorAll('li small')].map((s) => s.textContent.split(' · ').pop()),
      overflows: bar.scrollWidth > bar.clientWidth
        || [...bar.querySelectorAll('li')].some((li) => li.scrollWidth > li.clientWidth),
    };
  });

  // -- one turn ----------------------------------------------------------------------------------------
  await page.fill('#prompt', prompt);
  await page.click('#send');
  await page.waitForSelector('#compacting:not([hidden])', { timeout: 60000 });
  result.sawCompacting = true;
  await page.waitForFunction(
    (text) => [...document.querySelectorAll('.msg.assistant .text')].some((n) => n.textContent.includes(text)),
    expected, { timeout: 60000 });
  await page.waitForSelector('body[data-busy="false"]', { timeout: 60000 });
  // The bar after the turn, once the page has re-read the context endpoint.
  await page.waitForFunction(() => document.getElementById('session-model').textContent !== '', null,
                             { timeout: 10000 });
  await page.waitForTimeout(300);
  result.barPercent = await page.textContent('#ctx-percent');
  result.barLevel = await page.getAttribute('#context-bar', 'class');
  result.model = await page.textContent('#session-model');
  result.cost = await page.textContent('#session-cost');
  result.cache = await page.textContent('#session-cache');
  result.sessionId = await page.getAttribute('#sessions li.active', 'data-id');
  result.sessionTitle = await page.textContent('#sessions li.active .title');
  result.titleEllipsis = await page.evaluate(() => {
    const title = document.querySelector('#sessions li.active .title');
    return getComputedStyle(title).textOverflow === 'ellipsis' && title.scrollWidth > title.clientWidth;
  });
  result.sidebarOverflowsAfter = await page.evaluate(() => {
    const bar = document.getElementById('sessions');
    return bar.scrollWidth > bar.clientWidth;
  });
  result.toolCalls = await page.locator('details.tool').count();
  result.deniedCalls = await page.locator('details.tool.denied').allTextContents();
  result.assistantText = await page.locator('.msg.assistant .text').allTextContents();

  // -- what's in context: the picture above the table ---------------------------------------------------
  await page.click('#toggle-context');
  await page.waitForSelector('#segments tr', { timeout: 10000 });
  await page.waitForSelector('#context-picture:not([hidden])', { timeout: 10000 });
  result.segmentRows = await page.locator('#segments tr').count();
  result.picture = await page.evaluate(() => {
    const bar = document.getElementById('picture-bar');
    const slices = [...bar.querySelectorAll('.slice')];
    const tokens = (list) => list.reduce((sum, s) => sum + Number(s.dataset.tokens), 0);
    const width = (list) => list.reduce((sum, s) => sum + s.getBoundingClientRect().width, 0);
    return {
      figure: Number(bar.dataset.figure),
      sum: tokens(slices),
      used: tokens(slices.filter((s) => s.dataset.kind !== 'free')),
      kinds: [...new Set(slices.map((s) => s.dataset.kind))],
      titles: slices.map((s) => s.title),
      widthShare: width(slices) / bar.getBoundingClientRect().width,
      caption: document.getElementById('picture-caption').textContent,
      legend: [...document.querySelectorAll('#picture-legend li')].map((li) => li.textContent),
      aboveTable: document.getElementById('context-picture').getBoundingClientRect().bottom
        <= document.querySelector('#context-view table').getBoundingClientRect().top,
    };
  });
  result.tableFit = await page.evaluate(() => {
    const view = document.getElementById('context-view');
    const table = view.querySelector('table');
    return {
      viewScrollWidth: view.scrollWidth, viewClientWidth: view.clientWidth,
      tableRight: table.getBoundingClientRect().right, innerWidth: window.innerWidth,
      pageScrollWidth: document.documentElement.scrollWidth,
    };
  });
  await page.locator('details.tool').first().click();  // a collapsible tool call opens
  result.firstToolOpen = await page.locator('details.tool').first().evaluate((d) => d.open);
  await page.screenshot({ path: screenshot, fullPage: false });

  // -- the recorded session, opened again, still marks the refusal --------------------------------------
  await page.click('#sessions li.active');
  await page.waitForFunction((n) => document.querySelectorAll('details.tool').length === n, result.toolCalls,
                             { timeout: 10000 });
  result.deniedAfterReopen = await page.locator('details.tool.denied').count();

  // -- /docs in the same browser, signed in by the cookie -----------------------------------------------
  const docs = await context.newPage();
  // Swagger UI's own script and style come from a CDN: not reachable here, and not what is checked.
  await docs.route((url) => !url.href.startsWith(base), (route) => route.abort());
  const opened = await docs.goto(`${base}/docs`, { waitUntil: 'domcontentloaded' });
  result.docsStatus = opened.status();
  result.docsTitle = await docs.title();
  result.docsSpecStatus = await docs.evaluate(async () => (await fetch('/openapi.json')).status);
  await docs.close();
});
