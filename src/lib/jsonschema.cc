// libairlock: JSON Schema validation (jsonschema.h) with valijson over
// nlohmann::json.  Exceptions stop here: every entry point catches them.
#define VALIJSON_USE_EXCEPTIONS 1
// g++ 12 with the sanitizers reports maybe-uninitialized inside the
// std::regex and std::function that valijson's headers instantiate here:
// not ours to fix, and -Werror would stop the build.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "jsonschema.h"

struct al_jsonschema {
	valijson::Schema schema;
};

// valijson's context ("<root>", "[name]", "[0]") as a JSON pointer (RFC 6901)
static std::string pointer(const std::vector<std::string> &ctx)
{
	std::string p;
	for (const std::string &c : ctx) {
		if (c == "<root>")
			continue;
		std::string k = c.size() >= 2 && c.front() == '[' && c.back() == ']'
					? c.substr(1, c.size() - 2)
					: c;
		p += '/';
		for (char ch : k) {
			if (ch == '~')
				p += "~0";
			else if (ch == '/')
				p += "~1";
			else
				p += ch;
		}
	}
	return p;
}

// How deep arrays and objects nest (outside strings), stopping past max:
// valijson and nlohmann's comparisons recurse, and the document is hostile.
#define DEPTH_MAX 512
static bool too_deep(const char *p, size_t n)
{
	size_t depth = 0;
	bool str = false;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				str = false;
		} else if (c == '"') {
			str = true;
		} else if (c == '[' || c == '{') {
			if (++depth > DEPTH_MAX)
				return true;
		} else if ((c == ']' || c == '}') && depth) {
			depth--;
		}
	}
	return false;
}

static int add_error(json_t *errors, const std::string &at, const std::string &msg)
{
	json_t *e = json_pack("{s:s%,s:s%}", "at", at.data(), at.size(), "message", msg.data(),
			      msg.size());
	return e && json_array_append_new(errors, e) == 0 ? 0 : -1;
}

extern "C" int al_jsonschema_compile(const char *text, size_t len, struct al_jsonschema **out,
				     struct al_error *err)
{
	*out = nullptr;
	try {
		if (too_deep(text, len))
			return al_fail(err, AL_EINVAL, 0, "schema: nested deeper than %d",
				       DEPTH_MAX);
		nlohmann::json doc = nlohmann::json::parse(text, text + len);
		if (!doc.is_object() && !doc.is_boolean())
			return al_fail(err, AL_EINVAL, 0, "schema: not a JSON Schema (an object)");
		std::unique_ptr<al_jsonschema> s(new al_jsonschema);
		valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
		valijson::adapters::NlohmannJsonAdapter adapter(doc);
		parser.populateSchema(adapter, s->schema); // no fetch: remote $ref is an error
		*out = s.release();
		return 0;
	} catch (const nlohmann::json::parse_error &e) {
		return al_fail(err, AL_EINVAL, 0, "schema: not JSON: %s", e.what());
	} catch (const std::bad_alloc &) {
		return al_fail(err, AL_ENOMEM, 0, "schema: out of memory");
	} catch (const std::exception &e) {
		return al_fail(err, AL_EINVAL, 0, "schema: %s", e.what());
	}
}

extern "C" void al_jsonschema_free(struct al_jsonschema *s)
{
	delete s;
}

extern "C" int al_jsonschema_validate(const struct al_jsonschema *s, const char *doc, size_t len,
				      json_t *errors, size_t max_errors, struct al_error *err)
{
	try {
		if (len > AL_JSONSCHEMA_DOC_MAX) {
			add_error(errors, "", "larger than the 64 MiB a contract checks");
			return 2;
		}
		if (too_deep(doc, len)) {
			add_error(errors, "", "not JSON this check reads: nested deeper than 512");
			return 2;
		}
		nlohmann::json d;
		try {
			d = nlohmann::json::parse(doc, doc + len);
		} catch (const nlohmann::json::parse_error &e) {
			add_error(errors, "", std::string("not JSON: ") + e.what());
			return 2;
		}
		valijson::Validator v;
		valijson::ValidationResults results;
		valijson::adapters::NlohmannJsonAdapter target(d);
		if (v.validate(s->schema, target, &results))
			return 0;
		size_t n = 0;
		valijson::ValidationResults::Error e;
		while (n < max_errors && results.popError(e)) {
			if (add_error(errors, pointer(e.context), e.description) < 0)
				return al_fail(err, AL_ENOMEM, 0, "schema: out of memory");
			n++;
		}
		return 1;
	} catch (const std::bad_alloc &) {
		return al_fail(err, AL_ENOMEM, 0, "schema: out of memory");
	} catch (const std::exception &e) {
		return al_fail(err, AL_EIO, 0, "schema: %s", e.what());
	}
}
