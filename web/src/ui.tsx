// Shared pieces of the pages.  Everything an agent or a user wrote (names,
// paths, commands, messages, file contents) is rendered as text nodes by
// Preact, never as HTML; bidi and other invisible controls are shown as
// visible escapes, and such strings never become a link's target.
import type { ComponentChildren, JSX } from "preact";
import { ApiError } from "./api";

// Unicode Cc and the Cf characters that reorder or hide text (the set
// docs/api.md refuses in groups), shown as ⟨U+XXXX⟩
const INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;
export function visible(s: string): string {
	return s.replace(INVISIBLE, (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`);
}

export function Text({ value, class: cls }: { value: string; class?: string }): JSX.Element {
	return <span class={cls} dir="ltr">{visible(value)}</span>;
}

type Navigate = (href: string, replace?: boolean) => void;
let navigateFn: Navigate = (href) => {
	location.assign(href);
};
export function setNavigate(fn: Navigate): void {
	navigateFn = fn;
}
export function navigate(href: string, replace = false): void {
	navigateFn(href, replace);
}

// An in-app link: href is always a path the page built from ids it encoded.
export function Link({ href, children, class: cls }: { href: string; children: ComponentChildren; class?: string }): JSX.Element {
	return (
		<a
			href={href}
			class={cls}
			onClick={(e) => {
				if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey)
					return;
				e.preventDefault();
				navigate(href);
			}}
		>
			{children}
		</a>
	);
}

export function time(unix: number | null | undefined): string {
	if (!unix)
		return "—";
	return new Date(unix * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

export function short(id: string | null | undefined): string {
	if (!id)
		return "—";
	return id.startsWith("sha256:") ? `${id.slice(7, 19)}…` : id;
}

export function bytes(n: number): string {
	if (n < 1024)
		return `${n} B`;
	const units = ["KiB", "MiB", "GiB", "TiB"];
	let v = n / 1024;
	let i = 0;
	while (v >= 1024 && i < units.length - 1) {
		v /= 1024;
		i++;
	}
	return `${v.toFixed(1)} ${units[i]}`;
}

// What another tenant's object and a missing one both look like: the API
// answers them identically, and so does the page (no id echoed).
export function NotFound({ what }: { what: string }): JSX.Element {
	return (
		<main id="main" class="page notfound">
			<h1>Not found</h1>
			<p>There is no such {what} here.</p>
			<p>
				<Link href="/">Projects</Link>
			</p>
		</main>
	);
}

export function Failure({ error, what }: { error: unknown; what: string }): JSX.Element {
	if (error instanceof ApiError && error.status === 404)
		return <NotFound what={what} />;
	const msg = error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
	return (
		<main id="main" class="page">
			<h1>Something went wrong</h1>
			<p class="error" role="alert">
				<Text value={msg} />
			</p>
		</main>
	);
}

export function Loading(): JSX.Element {
	return (
		<main id="main" class="page">
			<p aria-busy="true">Loading…</p>
		</main>
	);
}
