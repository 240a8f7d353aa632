// Projects: the list; a project's head, history (strategy, conflicts),
// open drafts and runs.  Sections the principal's roles cannot read (an
// agent: history and drafts) say so instead of failing the page.
import type { JSX } from "preact";
import { ApiError, seg, type Commit, type Draft, type Project, type RunRecord } from "../api";
import { useGet } from "../hooks";
import { Failure, Link, Loading, short, Text, time } from "../ui";
import { canRead } from "../state";

export function ProjectsPage(): JSX.Element {
	const { data, error, loading } = useGet<Project[]>("/api/projects");
	if (loading && !data)
		return <Loading />;
	if (error)
		return <Failure error={error} what="project" />;
	return (
		<main id="main" class="page">
			<h1>Projects</h1>
			{data && data.length === 0 && <p>No projects yet.</p>}
			<table class="list">
				<thead>
					<tr>
						<th scope="col">Project</th>
						<th scope="col">Head</th>
						<th scope="col">Commits</th>
						<th scope="col">Created</th>
					</tr>
				</thead>
				<tbody>
					{(data ?? []).map((p) => (
						<tr key={p.name}>
							<td>
								<Link href={`/projects/${seg(p.name)}`}>
									<Text value={p.name} />
								</Link>
							</td>
							<td>
								<code title={p.head}>{short(p.head)}</code>
							</td>
							<td>{p.commits}</td>
							<td>{time(p.created)}</td>
						</tr>
					))}
				</tbody>
			</table>
		</main>
	);
}

function Section<T>({ title, path, children }: { title: string; path: string | null; children: (d: T) => JSX.Element }): JSX.Element {
	const { data, error, loading } = useGet<T>(path);
	return (
		<section aria-label={title}>
			<h2>{title}</h2>
			{!path ? (
				<p class="muted">Not shown to your roles.</p>
			) : loading && !data ? (
				<p aria-busy="true">Loading…</p>
			) : error ? (
				<p class="error">
					<Text value={error instanceof ApiError ? error.message : String(error)} />
				</p>
			) : data ? (
				children(data)
			) : null}
		</section>
	);
}

function conflicts(c: Commit): string {
	if (!c.conflicts.length)
		return "none";
	return c.conflicts.map((x) => (x.copy_path ? `${x.path} → ${x.copy_path}` : x.path)).join(", ");
}

export function ProjectPage({ name }: { name: string }): JSX.Element {
	const base = `/api/projects/${seg(name)}`;
	const { data: p, error, loading } = useGet<Project>(base);
	if (loading && !p)
		return <Loading />;
	if (error || !p)
		return <Failure error={error} what="project" />;
	const reader = canRead();
	return (
		<main id="main" class="page">
			<h1>
				Project <Text value={p.name} />
			</h1>
			<dl class="facts">
				<dt>Head</dt>
				<dd>
					<code class="head">{p.head}</code>
				</dd>
				<dt>Commits</dt>
				<dd>{p.commits}</dd>
				<dt>Created</dt>
				<dd>{time(p.created)}</dd>
			</dl>
			{reader && (
				<p>
					<Link href={`/audit?project=${seg(p.name)}`}>Audit of this project</Link>
				</p>
			)}
			<Section<Draft[]> title="Open drafts" path={reader ? `${base}/drafts` : null}>
				{(drafts) => {
					const open = drafts.filter((d) => d.state === "open");
					return open.length ? (
						<ul class="plain">
							{open.map((d) => (
								<li key={d.id}>
									<Link href={`/drafts/${seg(d.id)}`}>{d.id}</Link> from {d.run ? `run ${d.run}` : "a commit"}, {time(d.created)}
									{d.marks.length > 0 && <span class="badge warn"> {d.marks.join(", ")}</span>}
								</li>
							))}
						</ul>
					) : (
						<p class="muted">No open drafts.</p>
					);
				}}
			</Section>
			<Section<Commit[]> title="History" path={reader ? `${base}/log` : null}>
				{(log) => (
					<table class="list">
						<thead>
							<tr>
								<th scope="col">#</th>
								<th scope="col">Kind</th>
								<th scope="col">Strategy</th>
								<th scope="col">Author</th>
								<th scope="col">Message</th>
								<th scope="col">Conflicts</th>
								<th scope="col">Time</th>
							</tr>
						</thead>
						<tbody>
							{[...log].reverse().map((c) => (
								<tr key={c.seq}>
									<td>{c.seq}</td>
									<td>
										{c.kind}
										{c.draft && (
											<>
												{" "}
												<Link href={`/drafts/${seg(c.draft)}`}>{c.draft}</Link>
											</>
										)}
									</td>
									<td>{c.strategy}</td>
									<td>
										<Text value={c.author} />
									</td>
									<td>
										<Text value={c.message} />
									</td>
									<td>
										<Text value={conflicts(c)} />
									</td>
									<td>{time(c.time)}</td>
								</tr>
							))}
						</tbody>
					</table>
				)}
			</Section>
			<Section<RunRecord[]> title="Runs" path={`${base}/runs`}>
				{(runs) =>
					runs.length ? (
						<table class="list">
							<thead>
								<tr>
									<th scope="col">Run</th>
									<th scope="col">Command</th>
									<th scope="col">Principal</th>
									<th scope="col">Outcome</th>
									<th scope="col">Exit</th>
									<th scope="col">Started</th>
								</tr>
							</thead>
							<tbody>
								{[...runs].reverse().map((r) => (
									<tr key={r.id}>
										<td>
											<Link href={`/runs/${seg(r.id)}`}>{r.id}</Link>
										</td>
										<td>
											<Text value={r.argv.join(" ")} class="mono" />
										</td>
										<td>
											<Text value={r.principal ?? ""} />
										</td>
										<td>{r.outcome}</td>
										<td>{r.exit_code ?? "—"}</td>
										<td>{time(r.started)}</td>
									</tr>
								))}
							</tbody>
						</table>
					) : (
						<p class="muted">No runs.</p>
					)
				}
			</Section>
		</main>
	);
}
