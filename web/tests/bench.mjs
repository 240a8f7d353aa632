// The web UI's figures (bench/web.sh sets the stage: URL, token, runs):
// the first diff painted after navigating to a 1,000-file draft's review,
// the long tasks while its file list scrolls, and the longest main-thread
// task while a 5 MB, 100,000-line file's diff opens.  Prints
// "name value" lines; never fails on time.
import { chromium } from "playwright-core";

const env = process.env;
const browser = await chromium.launch({ executablePath: env.CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
const page = await ctx.newPage();
// every long task (> 50 ms) from the page's start
await page.addInitScript(() => {
	window.__long = [];
	new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); }).observe({ type: "longtask", buffered: true });
});
await page.goto(`${env.URL}/login`);
await page.getByLabel("Bearer token").fill(env.TOKEN);
await page.getByRole("button", { name: "Log in" }).click();
await page.getByRole("heading", { name: "Projects" }).waitFor();

const median = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
// 1. first diff painted, 1,000 files: navigation start to the merge view's first changed line
const paints = [];
for (let i = 0; i < 5; i++) {
	await page.goto(`${env.URL}/drafts/${env.BIG}`);
	await page.locator(".cm-mergeView .cm-changedLine, .cm-mergeView .cm-changedText").first().waitFor({ timeout: 30000 });
	paints.push(await page.evaluate(() => performance.now()));
}
console.log(`first_diff_ms ${Math.round(median(paints))} ${paints.map(Math.round).join(",")}`);
// 2. scrolling the file list: long tasks while it scrolls to the end and back
await page.evaluate(() => { window.__long = []; });
const list = page.locator("nav.files");
await list.hover();
for (let i = 0; i < 60; i++) await page.mouse.wheel(0, 600);
for (let i = 0; i < 60; i++) await page.mouse.wheel(0, -600);
await page.waitForTimeout(300);
const scrollLong = await page.evaluate(() => window.__long.slice());
console.log(`scroll_long_tasks ${scrollLong.length} max_ms ${Math.round(Math.max(0, ...scrollLong))}`);
// 3. a 5 MB, 100,000-line file: the longest main-thread task while its diff opens
const opens = [];
for (let i = 0; i < 3; i++) {
	await page.goto(`${env.URL}/drafts/${env.HUGE}`);
	await page.locator(".cm-mergeView .cm-changedLine, .cm-mergeView .cm-changedText").first().waitFor({ timeout: 60000 });
	await page.waitForTimeout(300);
	const l = await page.evaluate(() => window.__long.slice());
	opens.push(Math.round(Math.max(0, ...l)));
}
console.log(`huge_max_task_ms ${median(opens)} ${opens.join(",")}`);
await browser.close();
