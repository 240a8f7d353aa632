// /audit: the ledger, by group (?group=ID, a unit of work) or searched by
// project, kind, actor and time.  Each entry is a readable card with an
// "Engineering" disclosure holding its raw JSON, its ledger index, and its
// inclusion proof verified in this browser (merkle.ts).
import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, query, seg, type LedgerEntry, type LedgerEntryShow } from "../api";
import { useGet } from "../hooks";
import { Failure, Link, Loading, navigate, Text, time } from "../ui";
import { verifyEntry, type Verification } from "../merkle";

const list = (v: unknown): string[] => (Array.isArray(v) ? v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))) : []);
const str = (v: unknown): string => (v === undefined || v === null ? "—" : typeof v === "string" ? v : JSON.stringify(v));

function Field({ name, value }: { name: string; value: unknown }): JSX.Element | null {
	if (value === undefined)
		return null;
	const items = Array.isArray(value) ? list(value) : null;
	return (
		<>
			<dt>{name}</dt>
			<dd>
				{items ? (
					items.length ? (
						<ul class="plain">
							{items.map((x, i) => (
								<li key={i}>
									<Text value={x} class="mono" />
								</li>
							))}
						</ul>
					) : (
						"none"
					)
				) : (
					<Text value={str(value)} />
				)}
			</dd>
		</>
	);
}

// What a person wants to read of each kind; the rest is in Engineering.
function Summary({ e, show }: { e: LedgerEntry; show: LedgerEntryShow | null }): JSX.Element {
	const d = e.data;
	switch (e.kind) {
	case "run":
		return (
			<dl class="facts">
				<Field name="Command" value={Array.isArray(d.argv) ? list(d.argv).join(" ") : d.argv} />
				<Field name="Snapshot" value={d.base} />
				<Field name="Image" value={d.image} />
				<Field name="Network" value={d.network} />
				<Field name="Limits" value={d.limits} />
				<Field name="Outcome" value={d.outcome} />
				<Field name="Exit status" value={d.exit_code} />
				{show?.content && Object.entries(show.content).map(([k, v]) => (
					<>
						<dt>{k}</dt>
						<dd>
							<pre class="output">{v.length > 4000 ? `${v.slice(0, 4000)}\n… (truncated here; ${v.length} characters)` : v}</pre>
						</dd>
					</>
				))}
				{(d.stdout_truncated === true || d.stderr_truncated === true) && <Field name="Output" value="truncated by the output limit" />}
				{show?.delta && (
					<>
						<dt>Changes</dt>
						<dd>
							{show.delta.added} added, {show.delta.modified} modified, {show.delta.deleted} deleted
							{typeof d.draft === "string" && (
								<>
									{" "}
									— <Link href={`/drafts/${seg(d.draft)}`}>review</Link>
								</>
							)}
						</dd>
					</>
				)}
			</dl>
		);
	case "apply":
	case "reject":
		return (
			<dl class="facts">
				<Field name="Who" value={e.actor} />
				<Field name="When" value={time(e.time)} />
				<Field name="Mode" value={d.mode} />
				<Field name="Strategy" value={d.strategy} />
				<Field name="Paths" value={d.paths} />
				<Field name="Applied" value={d.applied} />
				<Field name="Discarded" value={d.discarded} />
				<Field name="Hunks" value={d.hunks} />
				<Field name="Draft" value={d.draft} />
				<Field name="Conflicts" value={d.conflicts} />
			</dl>
		);
	default:
		return (
			<dl class="facts">
				<Field name="Who" value={e.actor || "—"} />
				{Object.entries(d).slice(0, 12).map(([k, v]) => (
					<Field key={k} name={k} value={v} />
				))}
			</dl>
		);
	}
}

function ProofBadge({ v, error }: { v: Verification | null; error: string }): JSX.Element {
	if (error)
		return <span class="badge bad">proof unavailable: {error}</span>;
	if (!v)
		return <span class="badge">verifying…</span>;
	const ok = v.leaf.ok && v.inclusion.ok && v.signature.ok;
	return (
		<span class={`badge ${ok ? "good" : "bad"}`} data-proof={ok ? "verified" : "failed"} title={[v.leaf.why, v.inclusion.why, v.signature.why].join("; ")}>
			{ok ? (v.signature.byServer ? "inclusion verified; signature verified by the server" : "inclusion proof verified") : `proof FAILED: ${!v.leaf.ok ? v.leaf.why : !v.inclusion.ok ? v.inclusion.why : v.signature.why}`}
		</span>
	);
}

function Card({ e }: { e: LedgerEntry }): JSX.Element {
	const [show, setShow] = useState<LedgerEntryShow | null>(null);
	const [v, setV] = useState<Verification | null>(null);
	const [err, setErr] = useState("");
	useEffect(() => {
		let live = true;
		api<LedgerEntryShow>("GET", `/api/audit/${e.seq}`)
			.then(async (s) => {
				const r = await verifyEntry(s, e.seq);
				if (live) {
					setShow(s);
					setV(r);
				}
			})
			.catch((x) => live && setErr(String(x instanceof Error ? x.message : x)));
		return () => {
			live = false;
		};
	}, [e.seq]);
	// shown from the verified bytes once they are in
	let shown: LedgerEntry = e;
	if (show) {
		try {
			shown = JSON.parse(show.entry_text) as LedgerEntry;
		} catch {
			shown = e;
		}
	}
	return (
		<article class={`card kind-${shown.kind.replace(/[^a-z_]/g, "")}`} aria-labelledby={`e${e.seq}`} data-seq={e.seq}>
			<header>
				<h2 id={`e${e.seq}`}>
					<Text value={shown.kind} /> <span class="muted small">#{shown.seq}</span>
				</h2>
				<span class="muted">
					{time(shown.time)} · <Text value={shown.actor || "—"} />
					{shown.project && (
						<>
							{" "}
							· <Text value={shown.project} />
						</>
					)}
				</span>
				<ProofBadge v={v} error={err} />
			</header>
			<Summary e={shown} show={show} />
			<details>
				<summary>Engineering</summary>
				<p>
					Ledger index {shown.seq}; group <Text value={shown.group} class="mono" />
					{show && (
						<>
							; checkpoint of {show.checkpoint.size} entries, root <code>{show.checkpoint.root}</code>
						</>
					)}
				</p>
				{v && (
					<ul class="plain small">
						<li>{v.leaf.why}</li>
						<li>{v.inclusion.why}</li>
						<li>{v.signature.why}</li>
					</ul>
				)}
				<pre class="raw">{show ? show.entry_text : JSON.stringify(e, null, 1)}</pre>
			</details>
		</article>
	);
}

export default function AuditPage({ search }: { params: Record<string, string>; search: URLSearchParams }): JSX.Element {
	const group = search.get("group") ?? "";
	const project = search.get("project") ?? "";
	const kind = search.get("kind") ?? "";
	const actor = search.get("actor") ?? "";
	const since = search.get("since") ?? "";
	const sinceUnix = since ? String(Math.floor(Date.parse(since) / 1000)) : undefined;
	const path = `/api/audit${query({ group, project, kind, since: sinceUnix && sinceUnix !== "NaN" ? sinceUnix : undefined })}`;
	const { data, error, loading } = useGet<LedgerEntry[]>(path);
	const entries = (data ?? []).filter((e) => !actor || e.actor === actor);
	const shown = entries.slice(-200);
	return (
		<main id="main" class="page audit">
			<h1>Audit{group && <> of group <Text value={group} class="mono" /></>}</h1>
			<form
				class="search"
				aria-label="Search the ledger"
				onSubmit={(ev) => {
					ev.preventDefault();
					const f = new FormData(ev.currentTarget);
					const q: Record<string, string> = {};
					for (const k of ["group", "project", "kind", "actor", "since"]) {
						const val = String(f.get(k) ?? "").trim();
						if (val)
							q[k] = val;
					}
					navigate(`/audit${query(q)}`);
				}}
			>
				<label>
					Group <input name="group" value={group} />
				</label>
				<label>
					Project <input name="project" value={project} />
				</label>
				<label>
					Kind <input name="kind" value={kind} />
				</label>
				<label>
					Actor <input name="actor" value={actor} />
				</label>
				<label>
					Since <input name="since" type="date" value={since} />
				</label>
				<button type="submit">Search</button>
			</form>
			{loading && !data ? (
				<Loading />
			) : error ? (
				<Failure error={error} what="ledger" />
			) : (
				<>
					<p class="muted">
						{entries.length} entries{entries.length > shown.length ? `, the last ${shown.length} shown` : ""}.
					</p>
					{shown.map((e) => (
						<Card key={e.seq} e={e} />
					))}
				</>
			)}
		</main>
	);
}
