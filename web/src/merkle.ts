// Verifying a ledger entry in the browser, trusting nothing the server
// computed: the leaf is SHA-256(0x00 || the entry's exact bytes), the
// inclusion proof is walked up to a root as RFC 6962/9162 say (the same
// algorithm as src/lib/merkle.c), that root must be the one the signed
// checkpoint note names, and the note's Ed25519 signature is checked with
// WebCrypto where the browser has Ed25519 (else it says so: the server
// checked it).
const enc = new TextEncoder();

export function hexToBytes(hex: string): Uint8Array<ArrayBuffer> {
	if (!/^([0-9a-f]{2})*$/.test(hex))
		throw new Error("not lowercase hex");
	const out = new Uint8Array(hex.length / 2);
	for (let i = 0; i < out.length; i++)
		out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
	return out;
}

export function bytesToHex(b: Uint8Array): string {
	return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

async function sha256(...parts: Uint8Array[]): Promise<Uint8Array<ArrayBuffer>> {
	const n = parts.reduce((s, p) => s + p.length, 0);
	const buf = new Uint8Array(n);
	let o = 0;
	for (const p of parts) {
		buf.set(p, o);
		o += p.length;
	}
	return new Uint8Array(await crypto.subtle.digest("SHA-256", buf));
}

export const leafHash = (entryText: string): Promise<Uint8Array> => sha256(Uint8Array.of(0), enc.encode(entryText));
const nodeHash = (l: Uint8Array, r: Uint8Array): Promise<Uint8Array> => sha256(Uint8Array.of(1), l, r);

// RFC 9162 2.1.3.2: the root the proof leads to from leaf `index` of a tree
// of `size` leaves, or null if the proof has the wrong shape.
export async function rootFromInclusion(index: number, size: number, leaf: Uint8Array, proof: Uint8Array[]): Promise<Uint8Array | null> {
	if (index >= size || !Number.isSafeInteger(index) || !Number.isSafeInteger(size))
		return null;
	let fn = BigInt(index);
	let sn = BigInt(size - 1);
	let r = leaf;
	for (const p of proof) {
		if (sn === 0n)
			return null;
		if ((fn & 1n) === 1n || fn === sn) {
			r = await nodeHash(p, r);
			while ((fn & 1n) === 0n && fn !== 0n) {
				fn >>= 1n;
				sn >>= 1n;
			}
		} else {
			r = await nodeHash(r, p);
		}
		fn >>= 1n;
		sn >>= 1n;
	}
	return sn === 0n ? r : null;
}

export type Check = { ok: boolean; why: string };
export type Verification = { leaf: Check; inclusion: Check; signature: Check & { byServer: boolean } };

// The note's "size N" and "root HEX" lines (docs/formats.md)
function noteField(note: string, name: string): string | null {
	const m = new RegExp(`^${name} (\\S+)$`, "m").exec(note);
	return m ? m[1]! : null;
}

export async function verifyEntry(show: {
	entry_text: string;
	leaf: string;
	inclusion_proof: string[];
	included: boolean;
	checkpoint: { size: number; root: string; note: string; signature: string; key: string };
}, seq: number): Promise<Verification> {
	const leaf = await leafHash(show.entry_text);
	const leafOk = bytesToHex(leaf) === show.leaf;
	let parsedSeq: unknown = null;
	try {
		parsedSeq = (JSON.parse(show.entry_text) as { seq?: unknown }).seq;
	} catch {
		parsedSeq = null;
	}
	const cp = show.checkpoint;
	const noteRoot = noteField(cp.note, "root");
	const noteSize = Number(noteField(cp.note, "size"));
	let inclusion: Check;
	if (parsedSeq !== seq)
		inclusion = { ok: false, why: "the entry's bytes are not entry " + seq };
	else if (noteRoot !== cp.root || noteSize !== cp.size)
		inclusion = { ok: false, why: "the checkpoint's fields differ from its signed note" };
	else {
		const root = await rootFromInclusion(seq, cp.size, leaf, show.inclusion_proof.map(hexToBytes));
		inclusion = root && bytesToHex(root) === noteRoot
			? { ok: true, why: `entry ${seq} is in the tree of ${cp.size} entries whose root the checkpoint signs` }
			: { ok: false, why: "the inclusion proof does not lead from this entry's hash to the signed root" };
	}
	let signature: Check & { byServer: boolean };
	try {
		const key = await crypto.subtle.importKey("raw", hexToBytes(cp.key), { name: "Ed25519" }, false, ["verify"]);
		const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, hexToBytes(cp.signature), new Uint8Array(enc.encode(cp.note)));
		signature = { ok, byServer: false, why: ok ? "Ed25519 signature verified in this browser" : "the checkpoint's Ed25519 signature does not verify" };
	} catch {
		signature = { ok: show.included, byServer: true, why: "verified by the server (this browser has no Ed25519 in WebCrypto)" };
	}
	return {
		leaf: { ok: leafOk, why: leafOk ? "leaf hash recomputed from the entry's bytes" : "the entry's bytes do not hash to the leaf the server gave" },
		inclusion,
		signature,
	};
}
