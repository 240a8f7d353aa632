// The page's state shared by every page: who is logged in.
import type { Session } from "./api";

export let session: Session | null = null;
export function setSession(s: Session | null): void {
	session = s;
}
export const hasRole = (role: "admin" | "author" | "reviewer" | "agent"): boolean =>
	!!session && session.roles.includes(role);
// may read drafts, reviews, project logs and the audit (the API's READ roles)
export const canRead = (): boolean => hasRole("admin") || hasRole("author") || hasRole("reviewer");
