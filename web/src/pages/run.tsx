// /runs/ID: a run leads to its draft's review.  A principal who cannot
// read drafts (an agent: its own runs only) sees the run's record instead,
// with no review and no apply.
import type { JSX } from "preact";
import { useEffect } from "preact/hooks";
import { seg, type Schemas } from "../api";
import { useGet } from "../hooks";
import { Failure, Loading, navigate, Text, time } from "../ui";
import { canRead } from "../state";

type RunAnswer = Schemas["RunRunning"] | Schemas["RunEnded"] | Schemas["RunFailed"];

export function RunPage({ id }: { id: string }): JSX.Element {
	const { data, error, loading } = useGet<RunAnswer>(`/api/runs/${seg(id)}`);
	const draft = data && data.state === "ended" ? data.draft : null;
	useEffect(() => {
		if (draft && canRead())
			navigate(`/drafts/${seg(draft)}`, true);
	}, [draft]);
	if (loading && !data)
		return <Loading />;
	if (error || !data)
		return <Failure error={error} what="run" />;
	return (
		<main id="main" class="page">
			<h1>Run {data.id}</h1>
			<dl class="facts">
				<dt>State</dt>
				<dd>{data.state}</dd>
				{data.state === "ended" && (
					<>
						<dt>Command</dt>
						<dd>
							<Text value={data.argv.join(" ")} class="mono" />
						</dd>
						<dt>Outcome</dt>
						<dd>{data.outcome}</dd>
						<dt>Exit status</dt>
						<dd>{data.exit_code ?? "—"}</dd>
						<dt>Started</dt>
						<dd>{time(data.started)}</dd>
						<dt>Draft</dt>
						<dd>{data.draft ?? "none"}</dd>
					</>
				)}
				{data.state === "running" && (
					<>
						<dt>Started</dt>
						<dd>{time(data.started)}</dd>
					</>
				)}
			</dl>
			{data.state === "ended" && data.draft && !canRead() && <p class="muted">Reviewing and applying its draft is for reviewers.</p>}
		</main>
	);
}
