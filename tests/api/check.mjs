#!/usr/bin/env node
// The API contract, machine-checked (docs/api.md, "The contract"):
//
//   check.mjs lint DOC              DOC is a valid OpenAPI 3.0 document
//                                   (@apidevtools/swagger-parser) and keeps
//                                   this project's rules (strict schemas)
//   check.mjs routes DOC SERVER_C [WEB_C]  the daemon's route table
//                                   (src/server/server.c, and the UI's pages of
//                                   src/server/web.c) and DOC's paths are the
//                                   same, both ways
//   check.mjs answers DOC LOGDIR    every answer recorded in LOGDIR (tests/lib.sh's
//                                   curl wrapper) obeys DOC: route, status,
//                                   content type, required headers, and the body
//                                   against its schema (ajv)
//   check.mjs coverage DOC LOGDIR...  which declared answers the recorded ones
//                                   exercised (a report; AIRLOCK_API_LOG_KEEP
//                                   keeps each test's LOGDIR)
//
// Each prints what is wrong, one line per problem, and exits 1 if anything
// is; 2 on a usage error.
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";
import Ajv from "ajv";

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

function die(msg) {
	console.error(`check.mjs: ${msg}`);
	process.exit(2);
}

function load(path) {
	try {
		return JSON.parse(readFileSync(path, "utf8"));
	} catch (e) {
		die(`${path}: ${e.message}`);
	}
}

// A local JSON pointer ("#/components/responses/X") in doc.
function deref(doc, obj) {
	for (let n = 0; obj && typeof obj === "object" && typeof obj.$ref === "string"; n++) {
		if (n > 16 || !obj.$ref.startsWith("#/"))
			return undefined;
		obj = obj.$ref
			.slice(2)
			.split("/")
			.map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
			.reduce((o, k) => (o && typeof o === "object" ? o[k] : undefined), doc);
	}
	return obj;
}

// ---- schemas: OpenAPI 3.0 Schema Objects as JSON Schema (draft-07) for ajv ----

const DOC_ID = "openapi.json";

// OpenAPI 3.0's exclusiveMinimum/Maximum are booleans beside minimum/maximum
// (draft-04); draft-07 has numbers.  nullable is ajv's own keyword.  $refs
// point into one schema holding every component schema as a definition.
function toJsonSchema(s) {
	if (Array.isArray(s))
		return s.map(toJsonSchema);
	if (!s || typeof s !== "object")
		return s;
	const out = {};
	for (const [k, v] of Object.entries(s)) {
		if (k === "$ref" && typeof v === "string" && v.startsWith("#/components/schemas/"))
			out.$ref = `${DOC_ID}#/definitions/${v.slice("#/components/schemas/".length)}`;
		else if (k === "exclusiveMinimum" || k === "exclusiveMaximum") {
			const bound = k === "exclusiveMinimum" ? "minimum" : "maximum";
			if (v === true) {
				out[k] = s[bound];
			} else if (v !== false) {
				out[k] = v;
			}
		} else if ((k === "minimum" && s.exclusiveMinimum === true) ||
			   (k === "maximum" && s.exclusiveMaximum === true)) {
			continue;
		} else if (k === "properties" || k === "definitions") {
			out[k] = Object.fromEntries(Object.entries(v).map(([n, x]) => [n, toJsonSchema(x)]));
		} else if (k === "example" || k === "externalDocs" || k === "xml" || k.startsWith("x-")) {
			continue; /* annotations ajv does not know */
		} else {
			out[k] = toJsonSchema(v);
		}
	}
	return out;
}

function makeAjv(doc) {
	const ajv = new Ajv({ strict: true, allErrors: true, verbose: false });
	for (const f of ["binary", "byte", "int32", "int64", "float", "double", "password"])
		ajv.addFormat(f, true);
	ajv.addSchema(
		{ $id: DOC_ID, definitions: toJsonSchema(doc.components?.schemas ?? {}) },
		DOC_ID,
	);
	return ajv;
}

function ajvErrors(errors) {
	return (errors ?? []).map((e) => {
		const where = e.instancePath || "(the body)";
		if (e.keyword === "additionalProperties")
			return `${where}: undeclared field '${e.params.additionalProperty}'`;
		if (e.keyword === "required")
			return `${where}: missing field '${e.params.missingProperty}'`;
		return `${where}: ${e.message}${e.keyword === "enum" ? ` (${JSON.stringify(e.params.allowedValues)})` : ""}`;
	});
}

// ---- lint -------------------------------------------------------------------------

function* operations(doc) {
	for (const [path, item] of Object.entries(doc.paths ?? {}))
		for (const m of METHODS)
			if (item[m])
				yield [path, m, item[m]];
}

// Every Schema Object of the document, with where it is.
function* schemasOf(doc) {
	function* walk(s, where) {
		if (!s || typeof s !== "object")
			return;
		if (s.$ref)
			return;
		yield [s, where];
		for (const k of ["allOf", "oneOf", "anyOf"])
			for (const [i, x] of (s[k] ?? []).entries())
				yield* walk(x, `${where}/${k}/${i}`);
		for (const k of ["items", "not"])
			if (s[k])
				yield* walk(s[k], `${where}/${k}`);
		if (s.additionalProperties && typeof s.additionalProperties === "object")
			yield* walk(s.additionalProperties, `${where}/additionalProperties`);
		for (const [n, x] of Object.entries(s.properties ?? {}))
			yield* walk(x, `${where}/properties/${n}`);
	}
	for (const [n, s] of Object.entries(doc.components?.schemas ?? {}))
		yield* walk(s, `#/components/schemas/${n}`);
	const media = function* (content, where) {
		for (const [t, mt] of Object.entries(content ?? {}))
			yield* walk(mt.schema, `${where}/content/${t}/schema`);
	};
	for (const [n, r] of Object.entries(doc.components?.responses ?? {}))
		yield* media(r.content, `#/components/responses/${n}`);
	for (const [path, m, o] of operations(doc)) {
		const where = `${m.toUpperCase()} ${path}`;
		if (o.requestBody && !o.requestBody.$ref)
			yield* media(o.requestBody.content, `${where} requestBody`);
		for (const [st, r] of Object.entries(o.responses ?? {}))
			if (!r.$ref)
				yield* media(r.content, `${where} ${st}`);
	}
}

function isJson(type) {
	const t = type.split(";")[0].trim().toLowerCase();
	return t === "application/json" || t.endsWith("+json");
}

async function lint(docPath) {
	const problems = [];
	try {
		// validates against the OpenAPI 3.0 schema, resolves every $ref,
		// checks path parameters and operationIds
		await SwaggerParser.validate(docPath);
	} catch (e) {
		problems.push(`not a valid OpenAPI document: ${e.message}`);
	}
	const doc = load(docPath);
	if (!/^3\.0\.\d+$/.test(doc.openapi ?? ""))
		problems.push(`openapi is '${doc.openapi}': this project's tools read OpenAPI 3.0`);
	const ids = new Set();
	for (const [path, m, o] of operations(doc)) {
		const where = `${m.toUpperCase()} ${path}`;
		if (!o.operationId)
			problems.push(`${where}: no operationId (client generators name their functions by it)`);
		else if (ids.has(o.operationId))
			problems.push(`${where}: operationId ${o.operationId} is used twice`);
		ids.add(o.operationId);
		if (!o.summary)
			problems.push(`${where}: no summary`);
		for (const [st, r0] of Object.entries(o.responses ?? {})) {
			if (!/^[1-5][0-9][0-9]$/.test(st)) {
				problems.push(`${where}: response '${st}': every status is named (no default, no ranges), so an undeclared one fails the API tests`);
				continue;
			}
			const r = deref(doc, r0);
			if (!r) {
				problems.push(`${where} ${st}: unresolved ${r0.$ref}`);
				continue;
			}
			for (const [t, mt] of Object.entries(r.content ?? {}))
				if (!mt.schema)
					problems.push(`${where} ${st} ${t}: no schema`);
		}
	}
	for (const [s, where] of schemasOf(doc)) {
		const isObject = s.type === "object" || (s.properties && !s.type);
		if (s.properties && s.type !== "object")
			problems.push(`${where}: properties without type: object`);
		if (isObject && !("additionalProperties" in s) && (s.properties || !s.allOf))
			problems.push(`${where}: an object schema says whether it allows undeclared fields (additionalProperties: false for a fixed shape)`);
		if (isObject && s.additionalProperties === false)
			for (const r of s.required ?? [])
				if (!(r in (s.properties ?? {})))
					problems.push(`${where}: required '${r}' is not among its properties`);
	}
	const unrouted = doc["x-airlock-unrouted"];
	for (const kind of ["unknown-path", "other-method"]) {
		const set = unrouted?.[kind];
		if (!set || typeof set !== "object")
			problems.push(`x-airlock-unrouted.${kind}: missing (what a request that is no route answers)`);
		else
			for (const [st, r] of Object.entries(set))
				if (!/^[1-5][0-9][0-9]$/.test(st) || !deref(doc, r))
					problems.push(`x-airlock-unrouted.${kind}.${st}: not a status with a response`);
	}
	// every schema an answer is checked against compiles (strict: no unknown keyword)
	try {
		const ajv = makeAjv(doc);
		for (const [path, m, o] of operations(doc))
			for (const [st, r0] of Object.entries(o.responses ?? {}))
				for (const [t, mt] of Object.entries(deref(doc, r0)?.content ?? {}))
					if (isJson(t) && mt.schema) {
						try {
							ajv.compile(toJsonSchema(mt.schema));
						} catch (e) {
							problems.push(`${m.toUpperCase()} ${path} ${st} ${t}: ${e.message}`);
						}
					}
	} catch (e) {
		problems.push(`the component schemas do not compile: ${e.message}`);
	}
	return problems;
}

// ---- routes -------------------------------------------------------------------------

function routeTable(serverC) {
	const text = readFileSync(serverC, "utf8");
	const start = text.indexOf("static const struct route routes[] = {");
	if (start < 0)
		die(`${serverC}: no 'static const struct route routes[] = {'`);
	const body = text.slice(start).split("\n").slice(1);
	const routes = [];
	for (const line of body) {
		if (/^\s*\};/.test(line))
			return routes;
		if (/^\s*(\/\*.*\*\/)?\s*$/.test(line))
			continue;
		// one route a line: { "METHOD", "pattern", ROLES, h_handler, upload },
		const m = /^\s*\{\s*"([A-Z]+)",\s*"([^"]+)",\s*[A-Z_| ]+,\s*h_\w+,\s*(true|false)\s*\},\s*$/.exec(line);
		if (!m)
			die(`${serverC}: a line of the route table this check cannot read: ${line.trim()}`);
		routes.push(`${m[1]} /api/${m[2]}`);
	}
	die(`${serverC}: the route table does not end`);
}

// The UI's pages (src/server/web.c), one a line: { "METHOD", "/pattern" },
function pageTable(webC) {
	const text = readFileSync(webC, "utf8");
	const start = text.indexOf("static const struct page pages[] = {");
	if (start < 0)
		die(`${webC}: no 'static const struct page pages[] = {'`);
	const pages = [];
	for (const line of text.slice(start).split("\n").slice(1)) {
		if (/^\s*\};/.test(line))
			return pages;
		if (/^\s*(\/\*.*\*\/)?\s*$/.test(line))
			continue;
		const m = /^\s*\{\s*"([A-Z]+)",\s*"(\/[^"]*)"\s*\},\s*$/.exec(line);
		if (!m)
			die(`${webC}: a line of the page table this check cannot read: ${line.trim()}`);
		pages.push(`${m[1]} ${m[2]}`);
	}
	die(`${webC}: the page table does not end`);
}

function routes(docPath, serverC, webC) {
	const doc = load(docPath);
	const served = new Set([...routeTable(serverC), ...(webC ? pageTable(webC) : [])]);
	const documented = new Set([...operations(doc)].map(([p, m]) => `${m.toUpperCase()} ${p}`));
	const problems = [];
	for (const r of served)
		if (!documented.has(r))
			problems.push(`${r}: served (${serverC}${webC ? `, ${webC}` : ""}) but not in ${docPath}`);
	for (const r of documented)
		if (!served.has(r))
			problems.push(`${r}: in ${docPath} but not served (${serverC}${webC ? `, ${webC}` : ""})`);
	if (!served.size)
		problems.push(`${serverC}: an empty route table`);
	return problems;
}

// ---- answers ------------------------------------------------------------------------

// The last header block of a curl -D dump (after any 100 Continue).
function parseHeaders(text) {
	const blocks = text.split(/\r?\n\r?\n/).filter((b) => /^HTTP\/\S+ \d{3}/.test(b));
	if (!blocks.length)
		return null;
	const lines = blocks[blocks.length - 1].split(/\r?\n/);
	const status = Number(/^HTTP\/\S+ (\d{3})/.exec(lines[0])[1]);
	const headers = {};
	for (const l of lines.slice(1)) {
		const i = l.indexOf(":");
		if (i > 0)
			headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
	}
	return { status, headers };
}

function segments(p) {
	return p.split("/").filter((s) => s.length);
}

// The daemon's routing (server.c route_find): the request's path segments
// against each route's; a literal segment beats a {wildcard}.
function route(doc, urlPath) {
	const segs = segments(urlPath);
	const candidates = [];
	for (const [p, item] of Object.entries(doc.paths)) {
		const ps = segments(p);
		if (ps.length !== segs.length)
			continue;
		let literal = 0, ok = true;
		for (let i = 0; ok && i < ps.length; i++) {
			if (/^\{.*\}$/.test(ps[i]))
				continue;
			ok = ps[i] === segs[i];
			literal++;
		}
		if (ok)
			candidates.push({ path: p, item, literal });
	}
	candidates.sort((a, b) => b.literal - a.literal);
	return candidates;
}

function headerOk(value, schema) {
	if (!schema)
		return true;
	if (schema.type === "integer")
		return /^-?\d+$/.test(value) && (schema.minimum === undefined || Number(value) >= schema.minimum);
	if (schema.enum && !schema.enum.includes(value))
		return false;
	if (schema.pattern && !new RegExp(schema.pattern).test(value))
		return false;
	return true;
}

function compile(ajv, cache, schema) {
	if (!cache.has(schema))
		cache.set(schema, ajv.compile(toJsonSchema(schema)));
	return cache.get(schema);
}

// The problems of value against schema.  A oneOf's failure is told as the
// problems of the alternative it came closest to (ajv reports every one).
function validateBody(ajv, cache, doc, schema, value) {
	const validate = compile(ajv, cache, schema);
	if (validate(value))
		return [];
	const alternatives = deref(doc, schema)?.oneOf;
	if (!alternatives)
		return ajvErrors(validate.errors);
	let best = null;
	for (const alt of alternatives) {
		const v = compile(ajv, cache, alt);
		const errs = v(value) ? [] : ajvErrors(v.errors);
		const name = alt.$ref ? alt.$ref.split("/").pop() : "an alternative";
		if (!best || errs.length < best.errs.length)
			best = { name, errs };
	}
	if (!best.errs.length)
		return ["(the body): matches more than one of oneOf's alternatives"];
	return best.errs.map((e) => `${e} (as ${best.name}, the closest of oneOf's alternatives)`);
}

function answers(docPath, logDir) {
	const doc = load(docPath);
	const ajv = makeAjv(doc);
	const compiled = new Map(); /* schema object -> ajv's function */
	const index = join(logDir, "index");
	const problems = [];
	let checked = 0, unanswered = 0;
	const seen = new Set(); /* "METHOD /path status" of each answer */
	const lines = existsSync(index) ? readFileSync(index, "utf8").split("\n").filter(Boolean) : [];
	for (const line of lines) {
		const [id, method, url, rc] = line.split("\t");
		const hfile = join(logDir, `${id}.h`), bfile = join(logDir, `${id}.b`);
		const parsed = existsSync(hfile) ? parseHeaders(readFileSync(hfile, "latin1")) : null;
		if (!parsed) {
			unanswered++; /* no answer at all (refused TLS, closed connection): nothing to check */
			continue;
		}
		checked++;
		const { status, headers } = parsed;
		let u;
		try {
			u = new URL(url);
		} catch {
			problems.push(`${method} ${url}: not a URL`);
			continue;
		}
		let path;
		try {
			path = decodeURIComponent(u.pathname);
		} catch {
			path = u.pathname;
		}
		const what = `${method} ${u.pathname}${u.search} -> ${status}`;
		const candidates = route(doc, path);
		const hit = candidates.find((c) => c.item[method.toLowerCase()]);
		let response, where;
		if (hit) {
			const op = hit.item[method.toLowerCase()];
			where = `${method} ${hit.path}`;
			seen.add(`${where} ${status}`);
			response = op.responses?.[String(status)];
			if (!response) {
				problems.push(`${what}: status ${status} is not declared for ${where} (declared: ${Object.keys(op.responses ?? {}).join(", ")})`);
				continue;
			}
		} else {
			const kind = candidates.length ? "other-method" : "unknown-path";
			where = `x-airlock-unrouted.${kind}`;
			response = doc["x-airlock-unrouted"]?.[kind]?.[String(status)];
			if (!response) {
				problems.push(`${what}: no route of the document is ${method} ${path}, and ${status} is not what such a request answers (${where})`);
				continue;
			}
		}
		response = deref(doc, response);
		const body = existsSync(bfile) ? readFileSync(bfile) : Buffer.alloc(0);
		for (const [name, h0] of Object.entries(response.headers ?? {})) {
			const h = deref(doc, h0);
			const v = headers[name.toLowerCase()];
			if (v === undefined) {
				if (h?.required)
					problems.push(`${what}: header ${name} is missing (${where} ${status} requires it)`);
			} else if (!headerOk(v, deref(doc, h?.schema))) {
				problems.push(`${what}: header ${name}: '${v}' is not what ${where} ${status} declares`);
			}
		}
		const content = response.content ?? {};
		const type = headers["content-type"];
		if (!Object.keys(content).length) {
			if (body.length)
				problems.push(`${what}: a body where ${where} ${status} declares none`);
			continue;
		}
		if (!type) {
			problems.push(`${what}: no Content-Type (declared: ${Object.keys(content).join(", ")})`);
			continue;
		}
		const norm = (t) => t.toLowerCase().replace(/\s*;\s*/g, "; ").trim();
		const key = Object.keys(content).find((k) => norm(k) === norm(type));
		if (!key) {
			problems.push(`${what}: Content-Type '${type}' is not declared for ${where} ${status} (declared: ${Object.keys(content).join(", ")})`);
			continue;
		}
		if (!isJson(key))
			continue; /* bytes: the status, type and headers are the contract */
		if (rc !== "0") {
			problems.push(`${what}: the transfer did not complete (curl exit ${rc}), so its JSON body cannot be checked`);
			continue;
		}
		let value;
		try {
			value = JSON.parse(body.toString("utf8"));
		} catch (e) {
			problems.push(`${what}: the body is not JSON (${e.message}): ${body.toString("utf8").slice(0, 200)}`);
			continue;
		}
		for (const e of validateBody(ajv, compiled, doc, content[key].schema, value))
			problems.push(`${what}: ${e} (${where} ${status} ${key})`);
	}
	return { problems, checked, unanswered, seen };
}

// Which declared answers the recorded ones exercised (a report, not a check:
// some statuses, such as 503 out of memory, no test provokes).
function coverage(docPath, logDirs) {
	const doc = load(docPath);
	const seen = new Set();
	for (const d of logDirs)
		for (const s of answers(docPath, d).seen)
			seen.add(s);
	let declared = 0, hit = 0;
	for (const [path, m, o] of operations(doc)) {
		const where = `${m.toUpperCase()} ${path}`;
		const sts = Object.keys(o.responses ?? {});
		const got = sts.filter((s) => seen.has(`${where} ${s}`));
		declared += sts.length;
		hit += got.length;
		console.log(`${where}: ${got.join(" ") || "-"}${got.length < sts.length ? `  (not seen: ${sts.filter((s) => !got.includes(s)).join(" ")})` : ""}`);
	}
	console.log(`${hit} of ${declared} declared answers seen`);
}

// ---- main -------------------------------------------------------------------------

const [cmd, ...args] = process.argv.slice(2);
let problems;
if (cmd === "lint" && args.length === 1) {
	problems = await lint(args[0]);
} else if (cmd === "routes" && (args.length === 2 || args.length === 3)) {
	problems = routes(args[0], args[1], args[2]);
} else if (cmd === "answers" && args.length === 2) {
	const r = answers(args[0], args[1]);
	problems = r.problems;
	console.log(`${r.checked} answers checked${r.unanswered ? `; ${r.unanswered} requests got no answer` : ""}`);
} else if (cmd === "coverage" && args.length >= 2) {
	coverage(args[0], args.slice(1));
	problems = [];
} else {
	die("usage: check.mjs lint DOC | routes DOC SERVER_C [WEB_C] | answers DOC LOGDIR | coverage DOC LOGDIR...");
}
// once each, with how many times; a client's bytes (a method, a path) never
// reach the terminal raw
const seen = new Map();
for (const p of problems)
	seen.set(p, (seen.get(p) ?? 0) + 1);
for (const [p, n] of seen)
	console.log(
		p.replace(/[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`) +
			(n > 1 ? ` (${n} times)` : ""),
	);
process.exit(problems.length ? 1 : 0);
