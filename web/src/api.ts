// The API client: the daemon's answers typed by src/gen/api.ts, which
// openapi-typescript generates from docs/openapi.json at every build (never
// written by hand), so the page and the daemon cannot drift.  The session
// is an HttpOnly cookie the script never sees; the anti-CSRF value lives in
// this module's memory only (never in localStorage or sessionStorage).
import type { components } from "./gen/api";

export type Schemas = components["schemas"];
export type Session = Schemas["Session"];
export type Project = Schemas["Project"];
export type Commit = Schemas["Commit"];
export type Draft = Schemas["Draft"];
export type Review = Schemas["Review"];
export type ReviewFile = Schemas["ReviewFile"];
export type ReviewHunk = Schemas["ReviewHunk"];
export type ApplyRequest = Schemas["ApplyRequest"];
export type ApplyResult = Schemas["ApplyResult"];
export type RunRecord = Schemas["RunRecord"];
export type LedgerEntry = Schemas["LedgerEntry"];
export type LedgerEntryShow = Schemas["LedgerEntryShow"];
export type ConflictError = Schemas["ConflictError"];
export type Strategy = ApplyRequest["strategy"];

export const CSRF_HEADER = "X-Airlock-CSRF";

let csrf = "";
export function setCsrf(value: string): void {
	csrf = value;
}

export class ApiError extends Error {
	constructor(
		readonly status: number,
		readonly code: string,
		message: string,
		readonly body: unknown,
	) {
		super(message);
	}
}

function errorOf(body: unknown): { code: string; message: string } | null {
	if (body && typeof body === "object" && "error" in body) {
		const e = (body as Schemas["Error"]).error;
		if (e && typeof e.code === "string" && typeof e.message === "string")
			return e;
	}
	return null;
}

export async function api<T>(
	method: "GET" | "POST" | "PUT" | "DELETE",
	path: string,
	body?: unknown,
	headers: Record<string, string> = {},
): Promise<T> {
	const h: Record<string, string> = { ...headers };
	if (body !== undefined)
		h["Content-Type"] = "application/json";
	if (method !== "GET" && csrf)
		h[CSRF_HEADER] = csrf;
	const r = await fetch(path, {
		method,
		headers: h,
		body: body === undefined ? undefined : JSON.stringify(body),
		credentials: "same-origin",
		cache: "no-store",
		redirect: "error",
	});
	const text = await r.text();
	let json: unknown = null;
	try {
		json = text ? JSON.parse(text) : null;
	} catch {
		json = null;
	}
	if (!r.ok) {
		const e = errorOf(json);
		throw new ApiError(r.status, e?.code ?? "", e?.message ?? `HTTP ${r.status}`, json);
	}
	return json as T;
}

// path segments and query values, encoded (a name never becomes syntax)
export const seg = (s: string): string => encodeURIComponent(s);
export function query(params: Record<string, string | undefined>): string {
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(params))
		if (v !== undefined && v !== "")
			q.set(k, v);
	const s = q.toString();
	return s ? `?${s}` : "";
}
