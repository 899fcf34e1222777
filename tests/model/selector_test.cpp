#include "model/selector.hpp"
#include "model/json.hpp"

#include "support/catch.hpp"

using namespace spotshift::model;

namespace {
Labels labels(std::initializer_list<std::pair<std::string_view, std::string_view>> l) { return Labels(l); }
}  // namespace

TEST_CASE("label selector strings parse, match and round-trip", "[selector]") {
  struct Case {
    const char* text;
    const char* canonical;
    Labels matching;
    Labels not_matching;
  };
  const Case cases[] = {
      {"a=b", "a=b", labels({{"a", "b"}}), labels({{"a", "c"}})},
      {"a==b", "a=b", labels({{"a", "b"}}), labels({})},
      {"a!=b", "a!=b", labels({}), labels({{"a", "b"}})},
      {"env in (prod, staging)", "env in (prod,staging)", labels({{"env", "staging"}}), labels({{"env", "dev"}})},
      {"env notin (prod)", "env notin (prod)", labels({}), labels({{"env", "prod"}})},
      {"tier", "tier", labels({{"tier", ""}}), labels({{"other", "x"}})},
      {"!tier", "!tier", labels({{"x", "y"}}), labels({{"tier", "web"}})},
      {"  a = b ,  !c ", "a=b,!c", labels({{"a", "b"}}), labels({{"a", "b"}, {"c", "1"}})},
      {"z=1,a=2", "a=2,z=1", labels({{"a", "2"}, {"z", "1"}}), labels({{"a", "2"}})},
      {"gen>3", "gen>3", labels({{"gen", "4"}}), labels({{"gen", "3"}})},
      {"gen<3", "gen<3", labels({{"gen", "2"}}), labels({{"gen", "x"}})},
      {"gen<007", "gen<7", labels({{"gen", "6"}}), labels({{"gen", "7"}})},  // found by the fuzzer
      {"a=", "a=", labels({{"a", ""}}), labels({})},
      {"app in (web,agent),!multi", "app in (agent,web),!multi", labels({{"app", "web"}}), labels({{"app", "web"}, {"multi", "1"}})},
      {"example.com/role=worker", "example.com/role=worker", labels({{"example.com/role", "worker"}}), labels({})},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto sel = LabelSelector::parse(c.text);
    REQUIRE(sel);
    CHECK(sel->to_string() == c.canonical);
    CHECK(sel->matches(c.matching));
    CHECK_FALSE(sel->matches(c.not_matching));
    auto again = LabelSelector::parse(sel->to_string());
    REQUIRE(again);
    CHECK(*again == *sel);
  }
}

TEST_CASE("an empty label selector matches everything", "[selector]") {
  auto sel = LabelSelector::parse("   ");
  REQUIRE(sel);
  CHECK(sel->empty());
  CHECK(sel->matches(labels({{"x", "y"}})));
}

TEST_CASE("bad label selectors are rejected with the reason", "[selector][malformed]") {
  struct Bad {
    const char* text;
    const char* why;
  };
  const Bad cases[] = {
      {"a in b", "expected '('"},
      {"a in (b", "expected ',' or ')'"},
      {"a=b c", "expected ','"},
      {"=b", "expected a key"},
      {"!", "expected a key"},
      {"a foo (b)", "unknown operator"},
      {"-a=b", "begin and end with an alphanumeric"},
      {"Bad_Prefix/a=b", "prefix must be a lowercase DNS subdomain"},
      {"a=-b", "value \"-b\""},
      {"a>x", "integer"},
      {"a=b,,c", "expected a key"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto sel = LabelSelector::parse(c.text);
    REQUIRE_FALSE(sel);
    CHECK(sel.error().message.find("invalid label selector") == 0);
    CHECK(sel.error().message.find(c.why) != std::string::npos);
  }
  std::string long_value(64, 'a');
  CHECK_FALSE(LabelSelector::parse("a=" + long_value));
}

namespace {

// Reads the member key of the object in json with read(reader), as a kind's decoder does.
template <class Read>
auto read_member(JsonDecoder& d, const std::string& json, std::string_view key, Read read) {
  JsonReader r(json);
  decltype(read(r)) out{};
  d.members(r, [&](std::string_view k) {
    if (k != key) return false;
    out = read(r);
    return true;
  });
  return out;
}

}  // namespace

TEST_CASE("object-form label selectors decode matchLabels and matchExpressions", "[selector]") {
  const std::string doc = R"({"selector":{"matchLabels":{"app":"web"},
      "matchExpressions":[{"key":"tier","operator":"In","values":["fe","be"]},{"key":"canary","operator":"DoesNotExist"}]}})";
  JsonDecoder d("test");
  auto sel = read_member(d, doc, "selector", [&](JsonReader& r) { return d.label_selector(r); });
  REQUIRE(d.ok());
  REQUIRE(sel);
  CHECK(sel->to_string() == "app=web,!canary,tier in (be,fe)");
  CHECK(sel->matches(labels({{"app", "web"}, {"tier", "fe"}})));
  CHECK_FALSE(sel->matches(labels({{"app", "web"}, {"tier", "fe"}, {"canary", "y"}})));

  const std::string bad = R"({"selector":{"matchExpressions":[{"key":"tier","operator":"Gt","values":["1"]}]}})";
  JsonDecoder d2("test");
  read_member(d2, bad, "selector", [&](JsonReader& r) { return d2.label_selector(r); });
  REQUIRE_FALSE(d2.ok());
  CHECK(d2.take_error().message == "decoding test: selector.matchExpressions[0].operator: \"Gt\" is not a valid label selector operator");

  const std::string empty_values = R"({"selector":{"matchExpressions":[{"key":"tier","operator":"In","values":[]}]}})";
  JsonDecoder d3("test");
  read_member(d3, empty_values, "selector", [&](JsonReader& r) { return d3.label_selector(r); });
  REQUIRE_FALSE(d3.ok());
  CHECK(d3.take_error().message.find("needs at least one value") != std::string::npos);
}

TEST_CASE("node selector terms OR, their requirements AND, and empty terms match nothing", "[nodeselector]") {
  const std::string doc = R"({"ns":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"zone","operator":"In","values":["a"]},{"key":"cores","operator":"Gt","values":["8"]}]},
      {"matchFields":[{"key":"metadata.name","operator":"In","values":["special"]}]}]}})";
  JsonDecoder d("test");
  auto ns = read_member(d, doc, "ns", [&](JsonReader& r) { return d.node_selector(r); });
  REQUIRE(d.ok());
  REQUIRE(ns);
  CHECK(ns->matches(labels({{"zone", "a"}, {"cores", "16"}}), "n1"));
  CHECK_FALSE(ns->matches(labels({{"zone", "a"}, {"cores", "8"}}), "n1"));
  CHECK_FALSE(ns->matches(labels({{"zone", "b"}, {"cores", "16"}}), "n1"));
  CHECK(ns->matches(labels({}), "special"));
  CHECK_FALSE(NodeSelectorTerm{}.matches(labels({}), "n1"));
  CHECK_FALSE(NodeSelector{}.matches(labels({}), "n1"));

  const std::string bad = R"({"ns":{"nodeSelectorTerms":[{"matchFields":[{"key":"spec.x","operator":"In","values":["a"]}]}]}})";
  JsonDecoder d2("test");
  read_member(d2, bad, "ns", [&](JsonReader& r) { return d2.node_selector(r); });
  REQUIRE_FALSE(d2.ok());
  CHECK(d2.take_error().message.find("ns.nodeSelectorTerms[0].matchFields[0].key") != std::string::npos);
}

TEST_CASE("field selectors parse, escape and match", "[fieldselector]") {
  auto sel = FieldSelector::parse("spec.nodeName=node-a,status.phase!=Running");
  REQUIRE(sel);
  auto pod = [](std::string node, std::string phase) {
    return [=](std::string_view f) -> std::optional<std::string> {
      if (f == "spec.nodeName") return node;
      if (f == "status.phase") return phase;
      return std::nullopt;
    };
  };
  CHECK(sel->matches(pod("node-a", "Pending")));
  CHECK_FALSE(sel->matches(pod("node-a", "Running")));
  CHECK_FALSE(sel->matches(pod("node-b", "Pending")));
  CHECK(sel->to_string() == "spec.nodeName=node-a,status.phase!=Running");

  auto unscheduled = FieldSelector::parse("spec.nodeName=");
  REQUIRE(unscheduled);
  CHECK(unscheduled->matches(pod("", "Pending")));
  CHECK_FALSE(unscheduled->matches(pod("n", "Pending")));

  auto escaped = FieldSelector::parse(R"(metadata.name==a\,b\=c)");
  REQUIRE(escaped);
  CHECK(escaped->requirements()[0].value == "a,b=c");
  CHECK(escaped->to_string() == R"(metadata.name=a\,b\=c)");

  auto bad_field = FieldSelector::parse("spec.foo=x")->unsupported([](std::string_view f) { return f == "metadata.name"; });
  CHECK(bad_field == "spec.foo");
  CHECK_FALSE(FieldSelector::parse("nodeName"));
  CHECK_FALSE(FieldSelector::parse("=x"));
  CHECK_FALSE(FieldSelector::parse("a=b=c"));
  CHECK_FALSE(FieldSelector::parse(R"(a\ =x)"));  // found by the fuzzer: a backslash in the field name
}
