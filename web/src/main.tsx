// The web UI's entry: the session, the router, the login page and the
// shell.  The review page (CodeMirror) and the audit page are loaded only
// when they are opened (their own chunks).
import "./style.css";
import { render, type JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, setCsrf, type Session } from "./api";
import { Failure, Link, Loading, NotFound, setNavigate, Text } from "./ui";
import { session, setSession } from "./state";
import { ProjectsPage, ProjectPage } from "./pages/projects";
import { RunPage } from "./pages/run";

type PageModule = { default: (p: { params: Record<string, string>; search: URLSearchParams }) => JSX.Element };
const lazyPages: Record<string, () => Promise<PageModule>> = {
	review: () => import("./pages/review"),
	audit: () => import("./pages/audit"),
};

function Lazy({ name, params, search }: { name: string; params: Record<string, string>; search: URLSearchParams }): JSX.Element {
	const [mod, setMod] = useState<PageModule | null>(null);
	const [err, setErr] = useState<unknown>(null);
	useEffect(() => {
		let live = true;
		lazyPages[name]!().then((m) => live && setMod(m), (e) => live && setErr(e));
		return () => {
			live = false;
		};
	}, [name]);
	if (err)
		return <Failure error={err} what="page" />;
	if (!mod)
		return <Loading />;
	const Page = mod.default;
	return <Page params={params} search={search} />;
}

function Login({ next }: { next: string }): JSX.Element {
	const [error, setError] = useState("");
	const [busy, setBusy] = useState(false);
	return (
		<main id="main" class="page login">
			<h1>Log in to airlock</h1>
			<form
				onSubmit={async (e) => {
					e.preventDefault();
					const form = e.currentTarget;
					const input = form.elements.namedItem("token") as HTMLInputElement;
					const token = input.value.trim();
					input.value = ""; /* the token is exchanged once and forgotten */
					setBusy(true);
					setError("");
					try {
						const s = await api<Session>("POST", "/api/session", undefined, { Authorization: `Bearer ${token}` });
						setCsrf(s.csrf);
						setSession(s);
						window.dispatchEvent(new Event("airlock:session"));
						navigateTo(next.startsWith("/") && !next.startsWith("//") ? next : "/", true);
					} catch (err) {
						setError(err instanceof ApiError && err.status === 401 ? "That token is not valid (unknown, expired or revoked)." : String(err instanceof Error ? err.message : err));
					} finally {
						setBusy(false);
					}
				}}
			>
				<label for="token">Bearer token</label>
				<input id="token" name="token" type="password" autocomplete="off" required spellcheck={false} />
				<p class="hint">From <code>airlock admin token create</code>. It is exchanged for a session cookie and not kept by this page.</p>
				<button type="submit" disabled={busy}>
					Log in
				</button>
				{error && (
					<p class="error" role="alert">
						{error}
					</p>
				)}
			</form>
		</main>
	);
}

type Route = { path: string; search: URLSearchParams };
let setRouteFn: ((r: Route) => void) | null = null;
function current(): Route {
	return { path: location.pathname, search: new URLSearchParams(location.search) };
}
function navigateTo(href: string, replace = false): void {
	if (replace)
		history.replaceState(null, "", href);
	else
		history.pushState(null, "", href);
	window.scrollTo(0, 0);
	setRouteFn?.(current());
}
setNavigate(navigateTo);

function Page({ route }: { route: Route }): JSX.Element {
	const p = route.path;
	const parts = p.split("/").filter(Boolean).map((s) => {
		try {
			return decodeURIComponent(s);
		} catch {
			return s;
		}
	});
	if (p === "/" || p === "/projects")
		return <ProjectsPage />;
	if (parts[0] === "projects" && parts.length === 2)
		return <ProjectPage name={parts[1]!} />;
	if (parts[0] === "drafts" && parts.length === 2)
		return <Lazy name="review" params={{ id: parts[1]! }} search={route.search} />;
	if (parts[0] === "runs" && parts.length === 2)
		return <RunPage id={parts[1]!} />;
	if (p === "/audit")
		return <Lazy name="audit" params={{}} search={route.search} />;
	return <NotFound what="page" />;
}

function App(): JSX.Element {
	const [route, setRoute] = useState<Route>(current());
	const [state, setState] = useState<"loading" | "in" | "out" | "error">("loading");
	const [err, setErr] = useState<unknown>(null);
	useEffect(() => {
		setRouteFn = setRoute;
		const pop = () => setRoute(current());
		const login = () => setState("in");
		window.addEventListener("popstate", pop);
		window.addEventListener("airlock:session", login);
		api<Session>("GET", "/api/session").then(
			(s) => {
				setCsrf(s.csrf);
				setSession(s);
				setState("in");
			},
			(e) => {
				if (e instanceof ApiError && e.status === 401) {
					setState("out");
				} else {
					setErr(e);
					setState("error");
				}
			},
		);
		return () => {
			window.removeEventListener("popstate", pop);
			window.removeEventListener("airlock:session", login);
		};
	}, []);
	if (state === "loading")
		return <Loading />;
	if (state === "error")
		return <Failure error={err} what="session" />;
	const loggedIn = state === "in" && session;
	return (
		<>
			<a class="skip" href="#main">
				Skip to content
			</a>
			<header class="top">
				<nav aria-label="Main">
					<Link href="/" class="brand">
						airlock
					</Link>
					{loggedIn && <Link href="/">Projects</Link>}
					{loggedIn && <Link href="/audit">Audit</Link>}
				</nav>
				{loggedIn && session && (
					<div class="who">
						<span>
							<Text value={`${session.name}@${session.tenant}`} /> ({session.roles.join(", ")})
						</span>
						<button
							type="button"
							onClick={async () => {
								try {
									await api("DELETE", "/api/session");
								} finally {
									setCsrf("");
									setSession(null);
									setState("out");
									navigateTo("/login", true);
								}
							}}
						>
							Log out
						</button>
					</div>
				)}
			</header>
			{loggedIn ? <Page route={route} /> : <Login next={route.path === "/login" ? "/" : route.path + location.search} />}
		</>
	);
}

render(<App />, document.getElementById("app")!);
