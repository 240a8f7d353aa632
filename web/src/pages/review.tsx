// /drafts/ID: the review.  Provenance of the run; the changed files as a
// tree with change kinds and tick boxes (per directory, file and hunk); the
// diff editor (side by side or inline, remembered); binary files by size
// and digest, images previewed through <img>; accept all / selected /
// reject all with a merge strategy; a conflict (409) with its paths and the
// choices left.  No apply controls for a principal without the reviewer role.
import type { JSX } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, ApiError, query, seg, type ApplyResult, type ConflictError, type Draft, type Review, type ReviewFile, type ReviewHunk, type RunRecord, type Schemas, type Strategy } from "../api";
import { useGet } from "../hooks";
import { bytes, Failure, Link, Loading, short, Text, time, visible } from "../ui";
import { hasRole } from "../state";
import { diffInWorker, showDiff, type Mode, type Shown } from "../editor";

type RunAnswer = Schemas["RunRunning"] | Schemas["RunEnded"] | Schemas["RunFailed"];
// The apply request's entry for a path: the whole change, or some of its
// hunks (docs/api.md, "Choosing hunks"; the object form comes with the
// hunk-level accept).
type ApplyPath = string | { path: string; hunks: number[] };

const MODE_KEY = "airlock.review.mode"; /* a display preference only, never a credential */
const IMAGE_TYPES: Record<string, string> = { png: "png", jpg: "jpeg", jpeg: "jpeg", gif: "gif", webp: "webp", svg: "svg" };

function imageType(path: string): string | null {
	return IMAGE_TYPES[path.toLowerCase().split(".").pop() ?? ""] ?? null;
}

const OPS: Record<ReviewFile["op"], string> = { A: "added", M: "modified", D: "deleted" };

// ---- the file tree ------------------------------------------------------------

type Dir = { name: string; path: string; dirs: Map<string, Dir>; files: ReviewFile[] };

function buildTree(files: ReviewFile[]): Dir {
	const root: Dir = { name: "", path: "", dirs: new Map(), files: [] };
	for (const f of files) {
		const parts = f.path.split("/");
		let d = root;
		for (const p of parts.slice(0, -1)) {
			let next = d.dirs.get(p);
			if (!next) {
				next = { name: p, path: d.path ? `${d.path}/${p}` : p, dirs: new Map(), files: [] };
				d.dirs.set(p, next);
			}
			d = next;
		}
		d.files.push(f);
	}
	return root;
}

function filesUnder(d: Dir): string[] {
	const out = d.files.map((f) => f.path);
	for (const sub of d.dirs.values())
		out.push(...filesUnder(sub));
	return out;
}

type Sel = { whole: Set<string>; hunks: Map<string, Set<number>> };
const state = (sel: Sel, p: string): "all" | "some" | "none" => (sel.whole.has(p) ? "all" : sel.hunks.has(p) ? "some" : "none");

function Check({ label, value, onChange, disabled }: { label: string; value: "all" | "some" | "none"; onChange: (on: boolean) => void; disabled: boolean }): JSX.Element {
	const ref = useRef<HTMLInputElement>(null);
	useEffect(() => {
		if (ref.current)
			ref.current.indeterminate = value === "some";
	}, [value]);
	return <input ref={ref} type="checkbox" aria-label={label} checked={value === "all"} disabled={disabled} onChange={(e) => onChange(e.currentTarget.checked)} />;
}

function Tree({ dir, sel, setSel, current, choose, canSelect }: { dir: Dir; sel: Sel; setSel: (s: Sel) => void; current: string | null; choose: (p: string) => void; canSelect: boolean }): JSX.Element {
	const setPaths = (paths: string[], on: boolean) => {
		const whole = new Set(sel.whole);
		const hunks = new Map(sel.hunks);
		for (const p of paths) {
			hunks.delete(p);
			if (on)
				whole.add(p);
			else
				whole.delete(p);
		}
		setSel({ whole, hunks });
	};
	return (
		<ul class="tree">
			{[...dir.dirs.values()].map((d) => {
				const under = filesUnder(d);
				const n = under.filter((p) => state(sel, p) === "all").length;
				const some = under.some((p) => state(sel, p) !== "none");
				const v = n === under.length ? "all" : some ? "some" : "none";
				return (
					<li key={`d:${d.path}`} class="dir">
						<span class="row">
							{canSelect && <Check label={`directory ${visible(d.path)}/`} value={v} disabled={false} onChange={(on) => setPaths(under, on)} />}
							<span class="dirname">
								<Text value={`${d.name}/`} />
							</span>
						</span>
						<Tree dir={d} sel={sel} setSel={setSel} current={current} choose={choose} canSelect={canSelect} />
					</li>
				);
			})}
			{dir.files.map((f) => (
				<li key={f.path} class={`file ${current === f.path ? "current" : ""}`}>
					<span class="row">
						{canSelect && <Check label={`file ${visible(f.path)}`} value={state(sel, f.path)} disabled={false} onChange={(on) => setPaths([f.path], on)} />}
						<span class={`op op-${f.op}`} title={OPS[f.op]}>
							{f.op}
						</span>
						<button type="button" class="link" aria-current={current === f.path ? "true" : undefined} onClick={() => choose(f.path)}>
							<Text value={f.path.split("/").pop() ?? f.path} />
						</button>
						<span class="muted small">
							{f.binary ? "binary" : `+${f.additions} −${f.deletions}`}
							{f.outcome ? ` · ${f.outcome}` : ""}
						</span>
					</span>
				</li>
			))}
		</ul>
	);
}

// ---- one file -----------------------------------------------------------------

function Binary({ f }: { f: ReviewFile }): JSX.Element {
	const t = imageType(f.path);
	const side = (e: ReviewFile["old"], label: string) =>
		e && e.type === "file" && e.sha256 ? (
			<figure>
				<figcaption>
					{label}: {bytes(e.size)}, <code>{e.sha256}</code>
				</figcaption>
				{t && <img src={`/api/blobs/${seg(e.sha256)}/image${query({ type: t })}`} alt={`${label} version of ${visible(f.path)}`} />}
			</figure>
		) : (
			<p>
				{label}: {e ? e.type : "none"}
			</p>
		);
	return (
		<div class="binary">
			<p>{t ? "An image." : "Not shown as text (binary, or over 8 MiB)."}</p>
			{side(f.old, "Before")}
			{side(f.new, "After")}
		</div>
	);
}

function Hunks({ file, hunks, sel, setSel, canSelect }: { file: ReviewFile; hunks: ReviewHunk[]; sel: Sel; setSel: (s: Sel) => void; canSelect: boolean }): JSX.Element {
	const numbers = hunks.map((_, i) => i + 1);
	const taken = (n: number): boolean => sel.whole.has(file.path) || !!sel.hunks.get(file.path)?.has(n);
	const toggle = (n: number, on: boolean) => {
		const cur = new Set(numbers.filter(taken));
		if (on)
			cur.add(n);
		else
			cur.delete(n);
		const whole = new Set(sel.whole);
		const hm = new Map(sel.hunks);
		whole.delete(file.path);
		hm.delete(file.path);
		if (cur.size === numbers.length)
			whole.add(file.path);
		else if (cur.size)
			hm.set(file.path, cur);
		setSel({ whole, hunks: hm });
	};
	return (
		<section class="hunks" aria-label="Hunks">
			<h3>Hunks</h3>
			<ol>
				{hunks.map((h, i) => (
					<li key={i}>
						<label>
							{canSelect && file.op === "M" && <input type="checkbox" checked={taken(i + 1)} onChange={(e) => toggle(i + 1, e.currentTarget.checked)} />}{" "}
							<code>{h.header}</code> <span class="muted small">({h.lines.filter((l) => l.origin !== " ").length} changed lines)</span>
						</label>
					</li>
				))}
			</ol>
		</section>
	);
}

function FileView({ draft, file, mode, sel, setSel, canSelect }: { draft: string; file: ReviewFile; mode: Mode; sel: Sel; setSel: (s: Sel) => void; canSelect: boolean }): JSX.Element {
	const host = useRef<HTMLDivElement>(null);
	const [status, setStatus] = useState("Loading the diff…");
	const text = !file.binary && (file.old?.type ?? "file") === "file" && (file.new?.type ?? "file") === "file";
	const detail = useGet<Review>(text ? `/api/drafts/${seg(draft)}/review${query({ path: file.path })}` : null);
	useEffect(() => {
		if (!text || !host.current)
			return;
		let shown: Shown | null = null;
		let live = true;
		const blob = (e: ReviewFile["old"]) => (e && e.type === "file" && e.sha256 ? `/api/blobs/${seg(e.sha256)}` : null);
		setStatus("Loading the diff…");
		diffInWorker({ oldUrl: blob(file.old), newUrl: blob(file.new) }).then((d) => {
			if (!live || !host.current)
				return;
			if (!d.ok) {
				setStatus(`The diff could not be loaded: ${d.error}`);
				return;
			}
			shown = showDiff(host.current, file.path, mode, d);
			setStatus("");
			performance.mark("airlock:diff-painted");
		});
		return () => {
			live = false;
			shown?.destroy();
		};
	}, [draft, file.path, mode, text]);
	const hunks = detail.data?.files[0]?.hunks ?? [];
	return (
		<section class="fileview" aria-label={`Diff of ${visible(file.path)}`}>
			<h2 class="path">
				<span class={`op op-${file.op}`}>{OPS[file.op]}</span> <Text value={file.path} />
			</h2>
			{file.mode_changed && (
				<p class="muted">
					mode {file.old?.mode} → {file.new?.mode}
				</p>
			)}
			{text ? (
				<>
					{status && <p aria-live="polite">{status}</p>}
					<div ref={host} class={`editor mode-${mode}`} data-testid="editor" />
					{hunks.length > 0 && <Hunks file={file} hunks={hunks} sel={sel} setSel={setSel} canSelect={canSelect} />}
				</>
			) : file.old?.type === "symlink" || file.new?.type === "symlink" ? (
				<p>
					symlink: <Text value={file.old?.target ?? "—"} /> → <Text value={file.new?.target ?? "—"} />
				</p>
			) : (
				<Binary f={file} />
			)}
		</section>
	);
}

// ---- provenance ---------------------------------------------------------------

function Provenance({ draft, run }: { draft: Draft; run: RunAnswer | null }): JSX.Element {
	const rec = run && run.state === "ended" ? run : null;
	const verdict = rec ? (rec as { verdict?: unknown }).verdict : undefined;
	const duration = rec?.usage ? `${(rec.usage.wall_ms / 1000).toFixed(2)} s` : rec?.finished ? `${rec.finished - rec.started} s` : "—";
	return (
		<dl class="facts provenance" aria-label="Provenance">
			<dt>Project</dt>
			<dd>
				<Link href={`/projects/${seg(draft.project)}`}>
					<Text value={draft.project} />
				</Link>
			</dd>
			<dt>State</dt>
			<dd class="state">{draft.state}</dd>
			<dt>Run</dt>
			<dd>{draft.run ?? "none (a commit's draft)"}</dd>
			{rec && (
				<>
					<dt>Command</dt>
					<dd>
						<Text value={rec.argv.join(" ")} class="mono" />
					</dd>
					<dt>Principal</dt>
					<dd>
						<Text value={rec.principal ?? rec.author ?? "—"} />
					</dd>
					<dt>Exit status</dt>
					<dd>{rec.exit_code ?? (rec.signal ? `signal ${rec.signal}` : "—")}</dd>
					<dt>Duration</dt>
					<dd>{duration}</dd>
				</>
			)}
			<dt>Base</dt>
			<dd>
				<code title={draft.base}>{short(draft.base)}</code>
			</dd>
			<dt>Created</dt>
			<dd>{time(draft.created)}</dd>
			<dt>Limits hit</dt>
			<dd>{draft.marks.length ? draft.warnings.map((w, i) => <div key={i}><Text value={w} /></div>) : "none"}</dd>
			<dt>Neutralised files</dt>
			<dd>{rec?.neutralised?.length ? rec.neutralised.map((p) => <div key={p}><Text value={p} class="mono" /></div>) : "none"}</dd>
			{verdict !== undefined && (
				<>
					<dt>Replay verdict</dt>
					<dd>
						<Text value={typeof verdict === "string" ? verdict : JSON.stringify(verdict)} />
					</dd>
				</>
			)}
			<dt>Audit</dt>
			<dd>
				<Link href={`/audit${query({ group: draft.group })}`}>the unit of work's ledger entries</Link>
			</dd>
		</dl>
	);
}

// ---- apply --------------------------------------------------------------------

function Outcome({ result, error, retry }: { result: ApplyResult | null; error: unknown; retry: (s: Strategy) => void }): JSX.Element | null {
	if (result)
		return (
			<div class="outcome ok" role="status">
				<p>
					Draft {result.state.replace("_", " ")}: {result.applied} applied, {result.discarded} discarded.
					{result.seq !== null && <> Commit #{result.seq}, head <code class="newhead">{short(result.head)}</code>.</>}
					{result.rebased && " Replayed on the moved head."}
				</p>
				{result.conflicts.length > 0 && (
					<p>
						Conflict copies: <Text value={result.conflicts.map((c) => `${c.path} → ${c.copy_path ?? "kept"}`).join(", ")} />
					</p>
				)}
			</div>
		);
	if (!error)
		return null;
	if (error instanceof ApiError && error.status === 409 && error.code === "VolumeConflictError") {
		const c = (error.body as ConflictError).error;
		return (
			<div class="outcome conflict" role="alert">
				<h3>The head moved: these paths changed there too</h3>
				<ul>
					{c.paths.map((p) => (
						<li key={p}>
							<Text value={p} class="mono" />
						</li>
					))}
				</ul>
				<p>Nothing was applied. Choices left:</p>
				<button type="button" onClick={() => retry("conflict_copy")}>
					Apply with conflict copies
				</button>{" "}
				<button type="button" onClick={() => retry("rebase_if_disjoint")}>
					Replay on the current head
				</button>
			</div>
		);
	}
	return (
		<div class="outcome error" role="alert">
			<Text value={error instanceof ApiError ? `${error.code}: ${error.message}` : String(error)} />
		</div>
	);
}

// ---- the page -----------------------------------------------------------------

export default function ReviewPage({ params }: { params: Record<string, string> }): JSX.Element {
	const id = params.id ?? "";
	const d = useGet<Draft>(`/api/drafts/${seg(id)}`);
	const rv = useGet<Review>(`/api/drafts/${seg(id)}/review?stat=1`);
	const run = useGet<RunAnswer>(d.data?.run ? `/api/runs/${seg(d.data.run)}` : null);
	const [mode, setModeState] = useState<Mode>(() => (localStorage.getItem(MODE_KEY) === "inline" ? "inline" : "split"));
	const [current, setCurrent] = useState<string | null>(null);
	const [sel, setSel] = useState<Sel>({ whole: new Set(), hunks: new Map() });
	const [strategy, setStrategy] = useState<Strategy>("rebase_if_disjoint");
	const [busy, setBusy] = useState(false);
	const [result, setResult] = useState<ApplyResult | null>(null);
	const [error, setError] = useState<unknown>(null);
	const files = rv.data?.files ?? [];
	const tree = useMemo(() => buildTree(files), [files]);
	useEffect(() => {
		if (!current && files.length)
			setCurrent(files[0]!.path);
	}, [files]);
	if ((d.loading && !d.data) || (rv.loading && !rv.data))
		return <Loading />;
	if (d.error || !d.data)
		return <Failure error={d.error} what="draft" />;
	if (rv.error || !rv.data)
		return <Failure error={rv.error} what="draft" />;
	const draft = d.data;
	const open = draft.state === "open";
	const reviewer = hasRole("reviewer");
	const canSelect = reviewer && open;
	const file = files.find((f) => f.path === current) ?? null;
	const setMode = (m: Mode) => {
		localStorage.setItem(MODE_KEY, m);
		setModeState(m);
	};
	const apply = async (mode: ApplyRequestMode, strat: Strategy) => {
		setBusy(true);
		setError(null);
		setResult(null);
		const paths: ApplyPath[] = [...sel.whole, ...[...sel.hunks].map(([path, hs]) => ({ path, hunks: [...hs].sort((a, b) => a - b) }))];
		const body = mode === "accept_selected" ? { mode, strategy: strat, paths } : { mode, strategy: strat };
		try {
			const r = await api<ApplyResult>("POST", `/api/drafts/${seg(draft.id)}/apply`, body);
			setResult(r);
			d.reload();
			rv.reload();
		} catch (e) {
			setError(e);
		} finally {
			setBusy(false);
		}
	};
	const nsel = sel.whole.size + sel.hunks.size;
	return (
		<main id="main" class="page review">
			<h1>
				Review of draft {draft.id}
			</h1>
			<Provenance draft={draft} run={run.data} />
			<p class="stat">
				{rv.data.stat.files} files changed, <span class="add">+{rv.data.stat.additions}</span> <span class="del">−{rv.data.stat.deletions}</span>
			</p>
			{reviewer && open && (
				<form class="applybar" aria-label="Apply" onSubmit={(e) => e.preventDefault()}>
					<label>
						Strategy{" "}
						<select value={strategy} onChange={(e) => setStrategy(e.currentTarget.value as Strategy)}>
							<option value="rebase_if_disjoint">rebase if disjoint</option>
							<option value="strict">strict</option>
							<option value="conflict_copy">conflict copy</option>
						</select>
					</label>
					<button type="button" disabled={busy} onClick={() => apply("accept_all", strategy)}>
						Accept all
					</button>
					<button type="button" disabled={busy || nsel === 0} onClick={() => apply("accept_selected", strategy)}>
						Accept selected ({nsel})
					</button>
					<button type="button" disabled={busy} class="danger" onClick={() => apply("reject_all", strategy)}>
						Reject all
					</button>
				</form>
			)}
			<Outcome result={result} error={error} retry={(s) => apply(lastMode(sel), s)} />
			<div class="modes" role="radiogroup" aria-label="Diff layout">
				<label>
					<input type="radio" name="mode" value="split" checked={mode === "split"} onChange={() => setMode("split")} /> Side by side
				</label>
				<label>
					<input type="radio" name="mode" value="inline" checked={mode === "inline"} onChange={() => setMode("inline")} /> Inline
				</label>
			</div>
			<div class="split">
				<nav class="files" aria-label="Changed files">
					<Tree dir={tree} sel={sel} setSel={setSel} current={current} choose={setCurrent} canSelect={canSelect} />
				</nav>
				{file ? <FileView key={file.path} draft={draft.id} file={file} mode={mode} sel={sel} setSel={setSel} canSelect={canSelect} /> : <p>No changes.</p>}
			</div>
		</main>
	);
}

type ApplyRequestMode = Schemas["ApplyRequest"]["mode"];
const lastMode = (sel: Sel): ApplyRequestMode => (sel.whole.size + sel.hunks.size ? "accept_selected" : "accept_all");
