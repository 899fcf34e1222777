#include "model/json_reader.hpp"
#include "core/strings.hpp"
#include "model/pod.hpp"

#include "support/catch.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

using namespace spotshift;
using namespace spotshift::model;

namespace {

// Every token of a value, as "type:text", read through the reader's calls (skip not used).
void tokens(JsonReader& r, std::vector<std::string>& out) {
  std::string_view s;
  bool b;
  switch (r.peek()) {
    case JsonType::kObject:
      r.begin_object();
      out.push_back("{");
      while (r.next_member(s)) {
        out.push_back("key:" + std::string(s));
        tokens(r, out);
      }
      out.push_back("}");
      return;
    case JsonType::kArray:
      r.begin_array();
      out.push_back("[");
      while (r.next_element()) tokens(r, out);
      out.push_back("]");
      return;
    case JsonType::kString:
      r.read_string(s);
      out.push_back("string:" + std::string(s));
      return;
    case JsonType::kNumber:
      r.read_number(s);
      out.push_back("number:" + std::string(s));
      return;
    case JsonType::kBool:
      r.read_bool(b);
      out.push_back(b ? "true" : "false");
      return;
    case JsonType::kNull:
      r.read_null();
      out.push_back("null");
      return;
    case JsonType::kInvalid:
      r.skip();
      out.push_back("invalid");
      return;
  }
}

std::string error_of(std::string_view text) {
  JsonReader r(text);
  r.skip();
  r.finish();
  return r.error();
}

}  // namespace

TEST_CASE("the reader walks every kind of value in order", "[jsonreader]") {
  JsonReader r(R"( {"a": [1, -2.5e+3, 0, true, false, null],
                    "s": "plain", "e": "q\"b\\s\/n\nt\tu\u00e9\ud83d\ude00", "o": {}, "l": [] } )");
  std::vector<std::string> out;
  tokens(r, out);
  CHECK(r.finish());
  CHECK(out == std::vector<std::string>{"{",
                                        "key:a",
                                        "[",
                                        "number:1",
                                        "number:-2.5e+3",
                                        "number:0",
                                        "true",
                                        "false",
                                        "null",
                                        "]",
                                        "key:s",
                                        "string:plain",
                                        "key:e",
                                        "string:q\"b\\s/n\nt\tu\xc3\xa9\xf0\x9f\x98\x80",
                                        "key:o",
                                        "{",
                                        "}",
                                        "key:l",
                                        "[",
                                        "]",
                                        "}"});
}

TEST_CASE("the reader skips values whole and hands back their text", "[jsonreader]") {
  JsonReader r(R"({"skip": {"x": [1, {"y": "}]"}], "z": "\"{"}, "keep": "k", "raw": [1, {"a": null}] })");
  REQUIRE(r.begin_object());
  std::string_view key, value, raw;
  REQUIRE(r.next_member(key));
  CHECK(key == "skip");
  r.skip();
  REQUIRE(r.next_member(key));
  CHECK(key == "keep");
  REQUIRE(r.read_string(value));
  CHECK(value == "k");
  REQUIRE(r.next_member(key));
  REQUIRE(r.read_raw(raw));
  CHECK(raw == R"([1, {"a": null}])");
  CHECK_FALSE(r.next_member(key));
  CHECK(r.finish());
  CHECK(r.ok());
}

TEST_CASE("malformed JSON gives the offset and what was wrong, and nothing more is read", "[jsonreader]") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {R"({"a": 1,})", "invalid JSON at offset 8: expected a member name in quotes, found '}'"},
      {R"([1 2])", "invalid JSON at offset 3: expected ',' or ']' after an element, found '2'"},
      {R"({"a" 1})", "invalid JSON at offset 5: expected ':' after a member name, found '1'"},
      {R"({"a": 1 "b": 2})", "invalid JSON at offset 8: expected ',' or '}' after a member, found '\"'"},
      {R"("abc)", "invalid JSON at offset 4: a string is not closed"},
      {R"("a\x")", "invalid JSON at offset 3: invalid escape '\\x'"},
      {R"("\u12g4")", "invalid JSON at offset 3: \\u is not followed by four hex digits"},
      {R"("\ud800x")", "invalid JSON at offset 7: a high surrogate is not followed by a low one"},
      {"01", "invalid JSON at offset 1: unexpected '1' after the value"},
      {"1.", "invalid JSON at offset 2: a number has no digits after its '.'"},
      {"-", "invalid JSON at offset 1: a number has no digits"},
      {"1e+", "invalid JSON at offset 3: a number has no digits in its exponent"},
      {"tru", "invalid JSON at offset 0: expected true"},
      {"nul", "invalid JSON at offset 0: expected null"},
      {"[1,]", "invalid JSON at offset 3: expected a value, found ']'"},
      {"{", "invalid JSON at offset 1: expected a member name in quotes, found the end"},
      {"", "invalid JSON at offset 0: expected a value, found the end"},
      {"{} x", "invalid JSON at offset 3: unexpected 'x' after the value"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK(error_of(c.text) == c.error);
  }
  // Nesting is bounded, so a hostile body cannot exhaust the stack or memory.
  std::string deep(100000, '[');
  CHECK(error_of(deep) == "invalid JSON at offset 512: nested deeper than 512 levels");
  std::string fine = std::string(500, '[') + std::string(500, ']');
  CHECK(error_of(fine).empty());

  // After an error every call fails.
  JsonReader r("[1 2] [3]");
  std::vector<std::string> out;
  tokens(r, out);
  CHECK_FALSE(r.ok());
  CHECK(r.peek() == JsonType::kInvalid);
  CHECK_FALSE(r.begin_array());
  std::string_view s;
  CHECK_FALSE(r.read_number(s));
}

TEST_CASE("a pod decodes the same whatever the order of its members", "[jsonreader][decode]") {
  // matchLabelKeys and ephemeral volumes need the pod's labels and name, which here come after the spec.
  const std::string spec =
      R"("spec": {"nodeName": "n1", "volumes": [{"name": "scratch", "ephemeral": {}}],
          "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "a"}},
                                         "matchLabelKeys": ["hash"]}],
          "containers": [{"name": "c", "resources": {"limits": {"cpu": 2, "memory": "1Gi"}, "requests": {"memory": 1.5e3}}}]})";
  const std::string meta = R"("metadata": {"name": "p", "namespace": "ns", "labels": {"app": "a", "hash": "h1"}})";
  auto first = decode_pod("{" + meta + ", " + spec + "}");
  auto last = decode_pod("{" + spec + ", " + meta + "}");
  REQUIRE(first);
  REQUIRE(last);
  CHECK(*first == *last);
  CHECK(last->pvc_claims == std::vector<InternedString>{InternedString("p-scratch")});
  REQUIRE(last->topology_spread.size() == 1);
  CHECK(last->topology_spread[0].selector.to_string() == "app=a,hash in (h1)");
  // A limit without a request is the request; JSON numbers are quantities.
  CHECK(last->requests.cpu_milli == 2000);
  CHECK(last->requests.get("memory") == 1500);
}

TEST_CASE("lists and maps of any length decode whole; of repeated keys the last counts", "[jsonreader][decode]") {
  // Label maps and tolerations are gathered in place up to a few entries, then spill over.
  auto n = GENERATE(0, 1, 7, 8, 9, 16, 17, 40);
  std::string labels, tolerations;
  for (int i = n; i-- > 0;) {  // keys out of order
    labels += fmt::format(R"({}"k{:02}": "v{}")", labels.empty() ? "" : ",", i, i);
    tolerations += fmt::format(R"({}{{"key": "t{}", "operator": "Exists"}})", tolerations.empty() ? "" : ",", i);
  }
  // A key given twice (in labels: the second value wins; the tolerations member: the second list).
  std::string text = fmt::format(
      R"({{"metadata": {{"name": "p", "labels": {{{}{}"k00": "again"}}}},
           "spec": {{"tolerations": [{{"key": "dropped"}}], "tolerations": [{}], "containers": [{{"name": "c"}}]}}}})",
      labels, labels.empty() ? "" : ",", tolerations);
  auto pod = decode_pod(text);
  REQUIRE(pod);
  REQUIRE(pod->meta.labels.size() == size_t(std::max(n, 1)));
  int i = 0;
  for (const auto& [k, v] : pod->meta.labels) {
    CHECK(k.view() == fmt::format("k{:02}", i));
    CHECK(v.view() == (i == 0 ? std::string("again") : fmt::format("v{}", i)));
    ++i;
  }
  REQUIRE(pod->tolerations.size() == size_t(n));
  for (int t = 0; t < n; ++t) CHECK(pod->tolerations[size_t(t)].key.view() == fmt::format("t{}", n - 1 - t));
}

TEST_CASE("a pod that does not decode leaves the reader at the next item", "[jsonreader][decode]") {
  JsonReader r(R"([{"metadata": {"name": 7, "labels": {"deep": [[[1]]]}}, "spec": {"containers": "x"}},
                   {"metadata": {"name": "good"}}, null])");
  REQUIRE(r.begin_array());
  REQUIRE(r.next_element());
  auto bad = decode_pod(r);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "decoding pod: metadata.name: expected a string, got a number");
  REQUIRE(r.next_element());
  auto good = decode_pod(r);
  REQUIRE(good);
  CHECK(good->name() == "good");
  REQUIRE(r.next_element());
  auto null = decode_pod(r);
  REQUIRE_FALSE(null);
  CHECK(null.error().message == "decoding pod: expected an object, got null");
  CHECK_FALSE(r.next_element());
  CHECK(r.finish());
}

TEST_CASE("every truncation of a pod is an error, never a crash or a pod", "[jsonreader][malformed]") {
  const std::string text = read_file(std::string(TESTDATA_DIR "/pod.json")).value();
  REQUIRE(decode_pod(std::string_view(text)));
  size_t end = text.find_last_not_of(" \n\r\t") + 1;
  for (size_t n = 0; n < end; ++n) {
    INFO(n);
    auto p = decode_pod(std::string_view(text).substr(0, n));
    REQUIRE_FALSE(p);
    CHECK(p.error().kind == ErrorKind::kDecode);
  }
}
