// The browser suite (tests/integration/t0101-web-browser.sh sets the stage:
// URL, tokens, runs).  Prints TAP.  With SCREENSHOTS=DIR it also writes the
// README's screenshots there (make screenshots).
import { chromium } from "playwright-core";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const env = process.env;
const URL = env.URL;
const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
let n = 0, failed = 0;
function ok(cond, desc, diag) {
	n++;
	if (cond) console.log(`ok ${n} - ${desc}`);
	else {
		failed++;
		console.log(`not ok ${n} - ${desc}`);
		if (diag) for (const l of String(diag).split("\n").slice(0, 20)) console.log(`# ${l}`);
	}
	return cond;
}

// every API answer the browser gets, recorded for tests/api/check.mjs
let rec = 0;
async function record(resp) {
	const u = new globalThis.URL(resp.url());
	if (!env.API_LOG || u.origin !== URL || !u.pathname.startsWith("/api/")) return;
	const id = `b${String(rec++).padStart(6, "0")}`;
	const h = await resp.allHeaders().catch(() => null);
	if (!h) return;
	const lines = [`HTTP/1.1 ${resp.status()} ${resp.statusText()}`, ...Object.entries(h).map(([k, v]) => `${k}: ${v}`)];
	let body = null;
	if ((h["content-type"] ?? "").startsWith("application/json")) body = await resp.body().catch(() => null);
	if (body === null && (h["content-type"] ?? "").startsWith("application/json")) return; /* aborted by the test */
	writeFileSync(join(env.API_LOG, `${id}.h`), lines.join("\r\n") + "\r\n\r\n");
	if (body) writeFileSync(join(env.API_LOG, `${id}.b`), body);
	writeFileSync(join(env.API_LOG, "index"), `${id}\t${resp.request().method()}\t${resp.url()}\t0\n`, { flag: "a" });
}

const browser = await chromium.launch({ executablePath: env.CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
const IGNORED = /Failed to load resource: the server responded with a status of (401|403|404|409|422)/;

async function newPage(opts = {}) {
	const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 }, ...opts });
	const page = await ctx.newPage();
	const seen = { dialogs: [], errors: [], csp: [] };
	everySeen.push(seen);
	page.on("dialog", (d) => {
		seen.dialogs.push(d.message());
		d.dismiss().catch(() => {});
	});
	page.on("console", (m) => {
		if (m.type() === "error" && !IGNORED.test(m.text())) seen.errors.push(m.text());
	});
	page.on("pageerror", (e) => seen.errors.push(String(e)));
	page.on("response", (r) => {
		record(r).catch(() => {});
	});
	await page.exposeBinding("__airlockCsp", (_src, v) => seen.csp.push(v));
	await page.addInitScript(() => {
		document.addEventListener("securitypolicyviolation", (e) => window.__airlockCsp(`${e.violatedDirective} ${e.blockedURI}`));
	});
	return { ctx, page, seen };
}

async function login(page, token) {
	await page.goto(`${URL}/login`);
	await page.getByLabel("Bearer token").fill(token);
	await page.getByRole("button", { name: "Log in" }).click();
	await page.getByRole("heading", { name: "Projects" }).waitFor();
}

async function api(path, token) {
	const r = await fetch(`${URL}${path}`, { headers: { Authorization: `Bearer ${token}` } });
	return { status: r.status, body: await r.json().catch(() => null) };
}

async function shot(page, name) {
	if (!env.SCREENSHOTS) return;
	mkdirSync(env.SCREENSHOTS, { recursive: true });
	await page.screenshot({ path: join(env.SCREENSHOTS, name), fullPage: false });
}

const everySeen = [];
const clean = (seen) => seen.dialogs.length === 0 && seen.errors.length === 0 && seen.csp.length === 0;
const dirt = (seen) => JSON.stringify(seen);

try {
	// ---- log in, the run's review ------------------------------------------------
	const R = await newPage();
	const p = R.page;
	await login(p, env.RV_TOKEN);
	ok(true, "log in with a token: the projects page");
	const stored = await p.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
	ok(!stored.includes(env.RV_TOKEN) && !stored.includes("als_"), "the token and the session are in no storage the page's script can read", stored);
	await p.goto(`${URL}/runs/${env.RUN}`);
	await p.waitForURL(/\/drafts\//);
	await p.getByRole("heading", { name: /Review of draft/ }).waitFor();
	ok(true, "/runs/ID leads to its draft's review");
	// the run's facts come in a request of their own, after the draft's
	// heading: wait for them (a slow first page load read them empty)
	await p.getByLabel("Provenance").filter({ hasText: "echo alpha2" }).waitFor({ timeout: 15000 }).catch(() => {});
	const prov = await p.getByLabel("Provenance").innerText();
	ok(prov.includes("echo alpha2 >> a.txt") && prov.includes(env.RUN), "the provenance names the run and its command", prov);
	await p.locator(".cm-mergeView").waitFor();
	ok(await p.locator(".cm-changedLine, .cm-changedText").count() > 0, "side by side: the merge view marks the changes");
	await shot(p, "review-side-by-side.png");

	// ---- modes -------------------------------------------------------------------
	await p.getByRole("radio", { name: "Inline" }).check();
	/* the side-by-side view's editors match .cm-editor too: wait until it is gone */
	await p.locator(".cm-mergeView").waitFor({ state: "detached", timeout: 10000 }).catch(() => {});
	await p.locator(".cm-editor .cm-changedLine").first().waitFor();
	ok(await p.locator(".cm-mergeView").count() === 0, "inline: one editor, no side by side");
	await p.reload();
	await p.locator(".editor .cm-editor").first().waitFor();
	ok(await p.locator(".cm-mergeView").count() === 0 && await p.getByRole("radio", { name: "Inline" }).isChecked(), "the choice is remembered across a reload");
	await p.getByRole("button", { name: "c.txt" }).click();
	await p.locator(".hunks li").first().waitFor();
	ok(await p.locator(".hunks li").count() === 2, "c.txt's two hunks are listed from the review API");
	await shot(p, "review-inline.png");
	await p.getByRole("radio", { name: "Side by side" }).check();
	await p.locator(".cm-mergeView").waitFor();

	// ---- selection: a hunk's request shape, then two of three files ----------------
	await p.locator(".hunks input[type=checkbox]").first().check();
	let body = null;
	await p.route("**/api/drafts/*/apply", async (route) => {
		body = route.request().postDataJSON();
		await route.abort();
	});
	await p.getByRole("button", { name: /Accept selected/ }).click();
	await p.waitForTimeout(50);
	for (let i = 0; i < 50 && !body; i++) await p.waitForTimeout(20);
	await p.unroute("**/api/drafts/*/apply");
	R.seen.errors = R.seen.errors.filter((x) => !/net::ERR_FAILED/.test(x)); /* the request the test aborted */
	ok(JSON.stringify(body) === JSON.stringify({ mode: "accept_selected", strategy: "rebase_if_disjoint", paths: [{ path: "c.txt", hunks: [1] }] }), "one hunk of c.txt ticked: the request names it as {path, hunks} (docs/api.md, Choosing hunks)", JSON.stringify(body));
	await p.locator(".hunks input[type=checkbox]").first().uncheck();
	await p.getByLabel("file a.txt", { exact: true }).check();
	await p.getByLabel("file b.txt", { exact: true }).check();
	await p.getByRole("button", { name: "Accept selected (2)" }).click();
	await p.locator(".outcome.ok").waitFor();
	const outcome = await p.locator(".outcome.ok").innerText();
	ok(/partially applied: 2 applied, 2 discarded/.test(outcome), "accept selected: two applied, the rest discarded", outcome);
	const after = await api("/api/projects/p", env.RV_TOKEN);
	ok(after.body.head !== env.HEAD_BEFORE, "the project's head moved", JSON.stringify(after.body));
	ok(outcome.includes(after.body.head.slice(7, 19)), "…and the page shows the new head");

	// ---- audit -----------------------------------------------------------------------
	await p.goto(`${URL}/audit?group=web-review`);
	const apply = p.locator("article.card.kind-apply");
	await apply.waitFor();
	const text = await apply.innerText();
	ok(text.includes("a.txt") && text.includes("b.txt"), "the audit group shows the apply with its paths", text);
	await p.locator("[data-proof]").first().waitFor();
	await p.waitForFunction(() => document.querySelectorAll("article.card").length === document.querySelectorAll("[data-proof]").length);
	const proofs = await p.locator("[data-proof]").evaluateAll((els) => els.map((e) => e.getAttribute("data-proof")));
	ok(proofs.length >= 2 && proofs.every((x) => x === "verified"), `every entry's inclusion proof verified in the browser (${proofs.length})`, proofs.join(","));
	const sigText = await apply.locator("details").evaluate((d) => d.textContent);
	ok(/Ed25519 signature verified in this browser/.test(sigText), "the checkpoint's Ed25519 signature verified with WebCrypto", sigText);
	await shot(p, "audit.png");
	await p.route("**/api/audit/*", async (route) => {
		const r = await route.fetch();
		const j = await r.json();
		if (j.entry && j.entry.kind === "apply") j.entry_text = j.entry_text.replace("b.txt", "z.txt");
		await route.fulfill({ response: r, json: j });
	});
	await p.reload();
	await p.locator("article.card.kind-apply [data-proof]").waitFor();
	ok(await p.locator("article.card.kind-apply [data-proof]").getAttribute("data-proof") === "failed", "a tampered entry served to the page: its proof shows failed");
	ok(await p.locator("article.card.kind-run [data-proof]").getAttribute("data-proof") === "verified", "…the untouched entries still verify");
	await p.unroute("**/api/audit/*");
	ok(clean(R.seen), "no dialog, console error or CSP violation on these pages", dirt(R.seen));

	// ---- keyboard only ---------------------------------------------------------------------
	const K = await newPage();
	const k = K.page;
	await k.goto(`${URL}/login`);
	await k.keyboard.press("Tab"); /* skip link */
	for (let i = 0; i < 10 && !(await k.evaluate(() => document.activeElement?.id === "token")); i++) await k.keyboard.press("Tab");
	await k.keyboard.type(env.RV_TOKEN);
	await k.keyboard.press("Enter");
	await k.getByRole("heading", { name: "Projects" }).waitFor();
	await k.goto(`${URL}/drafts/${env.RUN2}`);
	await k.getByRole("heading", { name: /Review of draft/ }).waitFor();
	const focusOn = async (pred, max = 60) => {
		for (let i = 0; i < max; i++) {
			await k.keyboard.press("Tab");
			if (await k.evaluate(pred)) return true;
		}
		return false;
	};
	const reached = await focusOn(() => document.activeElement?.getAttribute("aria-label") === "file docs/notes.md");
	await k.keyboard.press("Space");
	const ticked = await k.getByLabel("file docs/notes.md", { exact: true }).isChecked();
	await focusOn(() => document.activeElement?.textContent?.startsWith("Accept selected") ?? false);
	const back = await k.evaluate(() => document.activeElement?.textContent ?? "");
	ok(reached && ticked, "keyboard only: Tab reaches the file's tick box, Space ticks it");
	if (!back.startsWith("Accept selected")) {
		/* the apply bar is before the tree: go round */
		await focusOn(() => document.activeElement?.textContent?.startsWith("Accept selected") ?? false, 120);
	}
	await k.keyboard.press("Enter");
	await k.locator(".outcome.ok").waitFor();
	ok(/applied: 1 applied/.test(await k.locator(".outcome.ok").innerText()), "…and Enter on Accept selected applies it");
	const axe = async (page, what) => {
		await page.evaluate(AXE);
		const res = await page.evaluate(async () => {
			const r = await window.axe.run(document, { resultTypes: ["violations"] });
			return r.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id}: ${v.nodes.length} (${v.nodes[0]?.target})`);
		});
		ok(res.length === 0, `axe-core: no serious or critical violation on ${what}`, res.join("\n"));
	};
	await k.goto(`${URL}/drafts/${env.RUN}`);
	await k.locator(".cm-mergeView, .editor .cm-editor").first().waitFor();
	await axe(k, "the review page");
	await k.goto(`${URL}/audit?group=web-review`);
	await k.locator("[data-proof]").first().waitFor();
	await axe(k, "the audit page");
	await k.goto(`${URL}/projects/p`);
	await k.getByRole("heading", { name: "Runs" }).waitFor();
	await axe(k, "the project page");

	// ---- hostile content -------------------------------------------------------------------
	const H = await newPage();
	const h = H.page;
	await login(h, env.RV_TOKEN);
	await h.goto(`${URL}/drafts/${env.RUN3}`);
	await h.getByRole("heading", { name: /Review of draft/ }).waitFor();
	const names = await h.locator("nav.files button.link").allInnerTexts();
	for (const name of names) {
		await h.getByRole("button", { name, exact: true }).click();
		await h.locator(".fileview").waitFor();
		await h.waitForFunction(() => !document.querySelector(".fileview [aria-live]") || document.querySelector(".editor .cm-editor"));
	}
	await h.getByRole("button", { name: "evil.svg" }).click();
	await h.locator(".binary img, .editor .cm-editor").first().waitFor();
	await h.waitForTimeout(300);
	ok(names.length === 6, `every hostile file is listed (${names.length})`, names.join(" | "));
	ok(names.some((x) => x.includes("⟨U+202E⟩")), "a bidi override in a name is shown as a visible escape", names.join(" | "));
	const injected = await h.evaluate(() => ({
		img: document.querySelectorAll('img[src="x"]').length,
		scripts: [...document.scripts].filter((s) => !s.src).length,
		jsLinks: document.querySelectorAll('a[href^="javascript:"]').length,
	}));
	ok(injected.img === 0 && injected.scripts === 0 && injected.jsLinks === 0, "no element was made from a name or content (no img[src=x], inline script, javascript: link)", JSON.stringify(injected));
	await h.getByRole("button", { name: "dot.png" }).click();
	await h.locator(".binary img").first().waitFor();
	const loaded = await h.locator(".binary img").first().evaluate((img) => img.complete && img.naturalWidth > 0);
	ok(loaded, "an image is previewed through <img>");
	await h.getByRole("button", { name: "long-line.txt" }).click();
	await h.locator(".editor .cm-editor").first().waitFor();
	ok(clean(H.seen), "hostile names and contents: no dialog, no console error, no CSP violation", dirt(H.seen));
	const svgDoc = await H.ctx.newPage();
	const svgSeen = [];
	svgDoc.on("dialog", (d) => {
		svgSeen.push(d.message());
		d.dismiss().catch(() => {});
	});
	const files = (await api(`/api/drafts/${env.RUN3}/review?stat=1`, env.RV_TOKEN)).body.files;
	const svg = files.find((f) => f.path === "evil.svg");
	await svgDoc.goto(`${URL}/api/blobs/${svg.new.sha256}/image?type=svg`);
	await svgDoc.waitForTimeout(300);
	ok(svgSeen.length === 0, "the SVG opened as a document runs nothing (CSP sandbox)", svgSeen.join(","));

	// ---- another tenant, an agent ---------------------------------------------------------
	const O = await newPage();
	await login(O.page, env.OTHER_TOKEN);
	await O.page.goto(`${URL}/drafts/${env.RUN}`);
	await O.page.getByRole("heading", { name: "Not found" }).waitFor();
	const theirs = await O.page.locator("main").innerText();
	await O.page.goto(`${URL}/drafts/d0123456789abc`);
	await O.page.getByRole("heading", { name: "Not found" }).waitFor();
	const missing = await O.page.locator("main").innerText();
	ok(theirs === missing, "another tenant's draft: the page a missing one gets, exactly", `${theirs}\n---\n${missing}`);
	await O.page.goto(`${URL}/runs/${env.RUN}`);
	await O.page.getByRole("heading", { name: "Not found" }).waitFor();
	await O.page.goto(`${URL}/projects/p`);
	await O.page.getByRole("heading", { name: "Not found" }).waitFor();
	ok(true, "…and so are its run and its project");
	const A = await newPage();
	await login(A.page, env.AG_TOKEN);
	await A.page.goto(`${URL}/runs/${env.AGENT_RUN}`);
	await A.page.getByRole("heading", { name: `Run ${env.AGENT_RUN}` }).waitFor();
	ok(await A.page.getByRole("button", { name: /Accept|Reject/ }).count() === 0, "an agent sees its run and no apply button");
	await A.page.goto(`${URL}/drafts/${env.AGENT_RUN}`);
	await A.page.locator("main h1").waitFor();
	ok(await A.page.getByRole("button", { name: /Accept|Reject/ }).count() === 0, "…nor on the draft's page");
	// log out
	await p.goto(`${URL}/`);
	await p.getByRole("button", { name: "Log out" }).click();
	await p.getByRole("heading", { name: "Log in to airlock" }).waitFor();
	const again = await p.evaluate(async () => (await fetch("/api/projects")).status);
	writeFileSync(join(env.T, "head-after"), (await api("/api/projects/p", env.RV_TOKEN)).body.head + "\n");
	ok(again === 401, "log out: the session no longer authenticates", again);
} catch (e) {
	ok(false, "the browser suite ran to its end", `${e?.stack ?? String(e)}\n${everySeen.map(dirt).join("\n")}`);
} finally {
	await browser.close();
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
