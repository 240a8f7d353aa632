// The diff editor: CodeMirror 6's merge view, side by side (MergeView) or
// inline (unifiedMergeView), read-only, highlighted by the file's language,
// unchanged regions collapsed, intra-line changes marked.  Its diff comes
// from the worker (diff.worker.ts).
import { Change, MergeView, unifiedMergeView } from "@codemirror/merge";
import { EditorState, type Extension } from "@codemirror/state";
import { EditorView, highlightSpecialChars, lineNumbers } from "@codemirror/view";
import { defaultHighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { javascript } from "@codemirror/lang-javascript";
import { python } from "@codemirror/lang-python";
import { json } from "@codemirror/lang-json";
import { markdown } from "@codemirror/lang-markdown";
import { css } from "@codemirror/lang-css";
import { html } from "@codemirror/lang-html";
import { cpp } from "@codemirror/lang-cpp";
import { yaml } from "@codemirror/lang-yaml";
import type { DiffAnswer, DiffRequest } from "./diff.worker";
import workerUrl from "./diff.worker.ts?worker&url";

// The page's CSP requires Trusted Types: the one script URL this page ever
// makes is its own worker's, under /assets/ on this origin (policy
// "airlock-worker", the only one the CSP allows).
type TrustedTypesLike = { createPolicy(name: string, rules: { createScriptURL(u: string): string }): { createScriptURL(u: string): unknown } };
const tt = (globalThis as { trustedTypes?: TrustedTypesLike }).trustedTypes;
const workerPolicy = tt?.createPolicy("airlock-worker", {
	createScriptURL(u: string): string {
		const url = new URL(u, location.href);
		if (url.origin !== location.origin || !url.pathname.startsWith("/assets/") || url.search || url.hash)
			throw new TypeError("airlock-worker: only this page's own worker script");
		return url.href;
	},
});

export type Mode = "split" | "inline";

function language(path: string): Extension {
	const ext = path.toLowerCase().split(".").pop() ?? "";
	switch (ext) {
	case "js": case "mjs": case "cjs": return javascript();
	case "jsx": return javascript({ jsx: true });
	case "ts": case "mts": return javascript({ typescript: true });
	case "tsx": return javascript({ typescript: true, jsx: true });
	case "py": return python();
	case "json": return json();
	case "md": case "markdown": return markdown();
	case "css": return css();
	case "html": case "htm": case "svg": case "xml": return html();
	case "c": case "h": case "cc": case "cpp": case "hpp": return cpp();
	case "yml": case "yaml": return yaml();
	default: return [];
	}
}

const theme = EditorView.theme({
	"&": { fontSize: "13px", maxHeight: "75vh" },
	".cm-scroller": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" },
});

function base(path: string, label: string): Extension[] {
	return [
		lineNumbers(),
		highlightSpecialChars(),
		syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
		language(path),
		EditorState.readOnly.of(true),
		EditorView.editable.of(false),
		EditorView.contentAttributes.of({ "aria-label": label, tabindex: "0" }),
		theme,
	];
}

let worker: Worker | null = null;
let nextId = 1;
const waiting = new Map<number, (a: DiffAnswer) => void>();

export function diffInWorker(req: Omit<DiffRequest, "id">): Promise<DiffAnswer> {
	if (!worker) {
		const url = workerPolicy ? workerPolicy.createScriptURL(workerUrl) : workerUrl;
		worker = new Worker(url as string | URL, { type: "module" });
		worker.onmessage = (e: MessageEvent<DiffAnswer>) => {
			waiting.get(e.data.id)?.(e.data);
			waiting.delete(e.data.id);
		};
	}
	const id = nextId++;
	return new Promise((resolve) => {
		waiting.set(id, resolve);
		worker!.postMessage({ ...req, id });
	});
}

export type Shown = { destroy(): void };

// The editor lives in a shadow root: CodeMirror then adds its styles as
// constructed style sheets (adoptedStyleSheets), which the page's CSP
// (style-src 'self', no inline style element) lets through; on a document
// it would insert a <style> element, which that CSP blocks.
function shadowOf(host: HTMLElement): { root: ShadowRoot; parent: HTMLElement } {
	const root = host.shadowRoot ?? host.attachShadow({ mode: "open" });
	root.replaceChildren();
	const parent = document.createElement("div");
	root.append(parent);
	return { root, parent };
}

export function showDiff(host: HTMLElement, path: string, mode: Mode, d: Extract<DiffAnswer, { ok: true }>): Shown {
	const { root, parent } = shadowOf(host);
	const changes: Change[] = [];
	for (let i = 0; i + 3 < d.changes.length; i += 4)
		changes.push(new Change(d.changes[i]!, d.changes[i + 1]!, d.changes[i + 2]!, d.changes[i + 3]!));
	const diffConfig = { override: () => changes };
	const collapseUnchanged = { margin: 3, minSize: 6 };
	if (mode === "split") {
		const v = new MergeView({
			root,
			a: { doc: d.a, extensions: base(path, `${path}, before`) },
			b: { doc: d.b, extensions: base(path, `${path}, after`) },
			parent,
			highlightChanges: true,
			gutter: true,
			collapseUnchanged,
			diffConfig,
		});
		return v;
	}
	const v = new EditorView({
		parent,
		root,
		state: EditorState.create({
			doc: d.b,
			extensions: [
				...base(path, `${path}, inline diff`),
				unifiedMergeView({ original: d.a, highlightChanges: true, gutter: true, mergeControls: false, collapseUnchanged, diffConfig }),
			],
		}),
	});
	return v;
}
