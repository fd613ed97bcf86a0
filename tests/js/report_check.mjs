// Opens a `nova replay|eval --report` page in Debian's headless chromium by file:// URL with the network
// blocked, and measures what a reader would see: errors, every plot drawn, each plot's size (from its
// element screenshot's PNG header), and whether the page reads at 1280 px. Prints one JSON object for
// the Python test to judge.
//
//   node report_check.mjs <report.html> <screenshot-dir>
import { chromium } from 'playwright-core';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [file, shots] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
mkdirSync(shots, { recursive: true });

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const result = { consoleErrors: [], pageErrors: [], blocked: [], plots: [] };
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  // Everything but the file itself is refused and counted: the page must need nothing else.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file:')) return route.continue();
    result.blocked.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') result.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => result.pageErrors.push(String(e)));
  await page.goto(pathToFileURL(resolve(file)).href, { waitUntil: 'load', timeout: 60000 });
  const count = await page.locator('div.plot').count();
  // Each plot is drawn once plotly has put its SVG in it; a page that never draws is reported, not thrown.
  try {
    await page.waitForFunction((n) => document.querySelectorAll('div.plot svg.main-svg').length >= n, count,
                               { timeout: 20000 });
  } catch (e) {
    result.pageErrors.push(`plots not drawn: ${e.message.split('\n')[0]}`);
  }
  await page.waitForTimeout(300);

  const plots = page.locator('div.plot');
  for (let i = 0; i < count; i += 1) {
    const plot = plots.nth(i);
    await plot.scrollIntoViewIfNeeded();
    const facts = await plot.evaluate((el) => {
      const graph = el.querySelector('.plotly-graph-div');
      // A drawn trace: a line or filled area with a path, or a bar with a size.
      const paths = [...el.querySelectorAll('.scatterlayer .trace path, .barlayer .trace path')];
      const drawn = paths.filter((p) => {
        const d = p.getAttribute('d') || '';
        const box = p.getBBox();
        return d.length > 2 && (box.width > 0 || box.height > 0);
      });
      const box = graph ? graph.getBoundingClientRect() : { width: 0, height: 0 };
      return {
        figure: el.dataset.figure,
        svg: el.querySelectorAll('svg.main-svg').length,
        traces: el.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length,
        drawnPaths: drawn.length,
        box: { width: box.width, height: box.height },
      };
    });
    const name = `${String(i + 1).padStart(2, '0')}-${facts.figure}.png`;
    const png = await plot.locator('.plotly-graph-div').screenshot();
    writeFileSync(join(shots, name), png);
    // The PNG header: width and height, big-endian, at bytes 16 and 20.
    facts.shot = { file: name, width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
    result.plots.push(facts);
  }

  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(shots, '00-page.png') });
  // The kept/dropped lists opened, as a reader would: long excerpts must not widen the page either.
  await page.evaluate(() => document.querySelectorAll('details.change').forEach((d) => { d.open = true; }));
  const first = page.locator('details.change').first();
  if (await first.count()) await first.screenshot({ path: join(shots, 'change-1.png') });
  // Hovering the first plot shows that call's figures.
  const drag = page.locator('div.plot').first().locator('.nsewdrag').first();
  await drag.scrollIntoViewIfNeeded();
  const area = await drag.boundingBox();
  if (area) {
    await page.mouse.move(area.x + area.width / 2, area.y + area.height / 2);
    await page.waitForTimeout(300);
  }
  result.hoverText = await page.locator('div.plot').first().locator('.hoverlayer text').allTextContents();
  await page.locator('div.plot').first().screenshot({ path: join(shots, 'hover.png') });
  result.readable = await page.evaluate(() => {
    const sizes = (selector) => [...document.querySelectorAll(selector)]
      .map((n) => parseFloat(getComputedStyle(n).fontSize)).filter((v) => !Number.isNaN(v));
    const min = (values) => (values.length ? Math.min(...values) : null);
    return {
      scrollWidth: document.documentElement.scrollWidth,
      bodyFont: parseFloat(getComputedStyle(document.body).fontSize),
      textFont: min(sizes('p, td, th, summary')),
      tickFont: min(sizes('.xtick text, .ytick text')),
      legendFont: min(sizes('.legendtext')),
      ticks: document.querySelectorAll('.xtick text, .ytick text').length,
      legends: document.querySelectorAll('.legendtext').length,
      details: document.querySelectorAll('details.change').length,
    };
  });
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
