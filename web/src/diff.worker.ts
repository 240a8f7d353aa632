// The diff of one file, off the main thread: fetch both versions (same
// origin, the session cookie), decode them, and compute the merge view's
// changes with CodeMirror's own algorithm (bounded: past the scan limit or
// the time budget it falls back to a coarser diff).  The page passes the
// result to the merge view (diffConfig.override), which then does no
// diffing of its own: a 5 MB file never blocks the page.
import { presentableDiff } from "@codemirror/merge";

export type DiffRequest = { id: number; oldUrl: string | null; newUrl: string | null };
export type DiffAnswer =
	| { id: number; ok: true; a: string; b: string; changes: Int32Array; ms: number }
	| { id: number; ok: false; error: string };

async function text(url: string | null): Promise<string> {
	if (!url)
		return "";
	const r = await fetch(url, { credentials: "same-origin", cache: "no-store" });
	if (!r.ok)
		throw new Error(`${url}: HTTP ${r.status}`);
	return new TextDecoder("utf-8", { fatal: false }).decode(await r.arrayBuffer());
}

self.onmessage = async (e: MessageEvent<DiffRequest>) => {
	const { id, oldUrl, newUrl } = e.data;
	try {
		const t0 = performance.now();
		const [a, b] = await Promise.all([text(oldUrl), text(newUrl)]);
		const changes = presentableDiff(a, b, { scanLimit: 20000, timeout: 2000 });
		const flat = new Int32Array(changes.length * 4);
		changes.forEach((c, i) => flat.set([c.fromA, c.toA, c.fromB, c.toB], i * 4));
		const answer: DiffAnswer = { id, ok: true, a, b, changes: flat, ms: performance.now() - t0 };
		(self as unknown as Worker).postMessage(answer, [flat.buffer]);
	} catch (err) {
		const answer: DiffAnswer = { id, ok: false, error: String(err instanceof Error ? err.message : err) };
		(self as unknown as Worker).postMessage(answer);
	}
};
