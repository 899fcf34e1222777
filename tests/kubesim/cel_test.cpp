#include "cel.hpp"
#include "schema.hpp"
#include "test_cluster.hpp"

using namespace spotshift;
using namespace spotshift::kubesim;
using testing::parse;

namespace {
// The rule's verdict on self, "error: ..." when it fails to evaluate, "compile: ..." when it is
// outside the subset.
std::string verdict(std::string_view rule, const std::string& self) {
  auto p = cel::Program::compile(rule);
  if (!p) return "compile: " + p.error().message;
  Doc d = parse(self);
  auto r = p->eval(d);
  if (!r) return "error: " + r.error().message;
  return *r ? "true" : "false";
}
}  // namespace

TEST_CASE("CEL: fields, has, size, in, comparisons and the conditional", "[cel]") {
  const std::string expr = R"({"key":"app","operator":"In","values":["a","b"]})";
  const char* rule =
      "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0";
  CHECK(verdict(rule, expr) == "true");
  CHECK(verdict(rule, R"({"key":"app","operator":"In"})") == "false");
  CHECK(verdict(rule, R"({"key":"app","operator":"Exists","values":["a"]})") == "false");
  CHECK(verdict(rule, R"({"key":"app","operator":"Exists"})") == "true");
  CHECK(verdict("self.values[1] == 'b' && self.key != 'x' && size(self.key) <= 3", expr) == "true");
  CHECK(verdict("'values' in self && !('other' in self)", expr) == "true");
  CHECK(verdict("duration(self) >= duration('1s')", R"("1m30s")") == "true");
  CHECK(verdict("duration(self) >= duration('1s')", R"("100ms")") == "false");
  CHECK(verdict("self > 2 && self < 10", "5") == "true");
  CHECK(verdict("self == -1", "-1") == "true");
  // Objects and maps compare by content, whatever the member order.
  CHECK(verdict("self.a == self.b", R"({"a":{"x":"1","y":["z"]},"b":{"y":["z"],"x":"1"}})") == "true");
  CHECK(verdict("self.a == self.b", R"({"a":{"x":"1"},"b":{"x":"2"}})") == "false");
  CHECK(verdict("(has(self.m) ? self.m : {}) == {}", "{}") == "true");
  CHECK(verdict("{'a': 'b'} == self", R"({"a":"b"})") == "true");
}

TEST_CASE("CEL: macros, errors and CEL's commutative && and ||", "[cel]") {
  const std::string lists = R"({"a":[{"k":"x"},{"k":"y"}],"b":[{"k":"y"}]})";
  CHECK(verdict("self.b.all(s, self.a.exists(o, o.k == s.k))", lists) == "true");
  CHECK(verdict("self.a.all(s, self.b.exists(o, o.k == s.k))", lists) == "false");
  CHECK(verdict("self.a.all(s, s.k in ['x', 'y'])", lists) == "true");
  CHECK(verdict("self.a.exists(s, s.k == 'z')", lists) == "false");
  // A missing field is an error, unless the other side of && or || decides.
  CHECK(verdict("self.missing == 1", "{}") == "error: no such key: missing");
  CHECK(verdict("self.missing == 1 && false", "{}") == "false");
  CHECK(verdict("true || self.missing == 1", "{}") == "true");
  CHECK(verdict("self.missing == 1 || false", "{}") == "error: no such key: missing");
  CHECK(verdict("self.l[3] == 1", R"({"l":[1]})") == "error: index out of bounds: 3");
  CHECK(verdict("self.a", lists) == "error: the rule's result is not a bool");
  // Outside the subset: refused at compile time, never skipped.
  CHECK(verdict("self.name.startsWith('x')", "{}") == "compile: kubesim does not evaluate the method startsWith()");
  CHECK(verdict("matches(self, 'x')", "{}") == "compile: kubesim does not evaluate the function matches()");
  CHECK(verdict("self + 1 > 2", "1").starts_with("compile: unexpected \"+"));
  CHECK(verdict("has(self)", "{}") == "compile: has() takes a field selection");
}

TEST_CASE("a CRD schema with list types and CEL rules", "[schema]") {
  Doc s = parse(R"J({"type":"object","properties":{"spec":{"type":"object",
      "x-kubernetes-validations":[{"rule":"!has(self.a) || !has(self.b) || self.a != self.b","message":"a and b must differ"}],
      "properties":{
        "a":{"type":"string"},"b":{"type":"string"},
        "set":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
        "map":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
               "items":{"type":"object","properties":{"name":{"type":"string"},"weight":{"type":"integer"}}}},
        "labels":{"type":"object","maxProperties":1,"additionalProperties":{"type":"string"}},
        "delay":{"type":"string","x-kubernetes-validations":[{"rule":"duration(self) >= duration('1s')"}]
}
}
}
}
})");
  auto schema = Schema::parse(s);
REQUIRE(schema);
auto causes = [&](const std::string& spec) {
  Doc d = parse(R"({"spec":)" + spec + "}");
  std::vector<StatusCause> out;
  std::vector<std::string> unknown;
  (*schema)->apply_root(d, d.GetAllocator(), out, unknown);
  return join_causes(out);
};
CHECK(causes(R"({"a":"x","b":"y","set":["p","q"],"map":[{"name":"p"},{"name":"q"}],"delay":"2s"})").empty());
CHECK(causes(R"({"a":"x","b":"x"})") == "spec: Invalid value: a and b must differ");
CHECK(causes(R"({"set":["p","q","p"]})") == R"(spec.set[2]: Duplicate value: "p")");
CHECK(causes(R"({"map":[{"name":"p","weight":1},{"name":"p","weight":2}]})") == R"(spec.map[1]: Duplicate value: {"name":"p"})");
CHECK(causes(R"({"labels":{"x":"1","y":"2"}})").starts_with("[spec.labels: Too many: 2: must have at most 1 items"));
// A scalar's value is shown; a rule without a message gets the apiserver's.
CHECK(causes(R"({"delay":"10ms"})") == R"J(spec.delay: Invalid value: "10ms": failed rule: duration(self) >= duration('1s'))J");
  // A default that breaks its rules refuses the schema, as the apiserver refuses the CRD; the
  // defaults inside the default are not applied first.
  auto bad_default = Schema::parse(parse(R"J({"type":"object","properties":{"spec":{"type":"object","default":{},
      "x-kubernetes-validations":[{"rule":"self.mode != 'x'","message":"not x"}],
      "properties":{"mode":{"type":"string","default":"y"}}}}})J"));
  REQUIRE_FALSE(bad_default);
  CHECK(bad_default.error().message == "properties[spec].default: Invalid value: no such key: mode evaluating rule: not x");
  // A rule outside kubesim's subset refuses the schema.
  auto refused = Schema::parse(parse(R"J({"type":"string","x-kubernetes-validations":[{"rule":"self.matches('^a')"}]})J"));
  REQUIRE_FALSE(refused);
  CHECK(
      refused.error().message ==
      "x-kubernetes-validations: kubesim cannot evaluate the rule \"self.matches('^a')\": kubesim does not evaluate the method matches()");
}
