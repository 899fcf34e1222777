#include "patch.hpp"
#include "schema.hpp"
#include "test_cluster.hpp"

using namespace spotshift;
using namespace spotshift::kubesim;
using testing::parse;

namespace {
std::string merged(PatchType type, const std::string& target, const std::string& patch) {
  Doc t = parse(target);
  Doc p = parse(patch);
  if (type == PatchType::kMerge) merge_patch(t, p, t.GetAllocator());
  else if (type == PatchType::kStrategic) REQUIRE(strategic_merge_patch(t, p, t.GetAllocator()));
  else REQUIRE(json_patch(t, p, t.GetAllocator()));
  return to_json(t);
}
}  // namespace

TEST_CASE("a merge patch merges objects, deletes with null and replaces lists", "[patch]") {
  CHECK(merged(PatchType::kMerge, R"({"a":1,"b":{"c":2,"d":3},"l":[1,2]})", R"({"a":null,"b":{"c":5},"l":[9],"n":true})") ==
        R"({"b":{"c":5,"d":3},"l":[9],"n":true})");
}

TEST_CASE("a strategic merge patch merges containers by name and replaces taints", "[patch]") {
  CHECK(merged(PatchType::kStrategic,
               R"({"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}],"taints":[{"key":"k1"},{"key":"k2"}]}})",
               R"({"spec":{"containers":[{"name":"b","image":"z"},{"name":"c","image":"w"}],"taints":[{"key":"k3"}]}})") ==
        R"({"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"z"},{"name":"c","image":"w"}],"taints":[{"key":"k3"}]}})");
}

TEST_CASE("strategic merge directives delete list elements and primitives", "[patch]") {
  CHECK(merged(PatchType::kStrategic, R"({"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"X","status":"True"}]}})",
               R"({"status":{"conditions":[{"type":"X","$patch":"delete"},{"type":"Ready","status":"False"}]}})") ==
        R"({"status":{"conditions":[{"type":"Ready","status":"False"}]}})");
  CHECK(merged(PatchType::kStrategic, R"({"metadata":{"finalizers":["a","b"]}})",
               R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],"finalizers":["c"]}})") ==
        R"({"metadata":{"finalizers":["b","c"]}})");
  CHECK(merged(PatchType::kStrategic, R"({"spec":{"unschedulable":true}})", R"({"spec":{"unschedulable":null}})") == R"({"spec":{}})");
  CHECK(merged(PatchType::kStrategic, R"({"spec":{"a":{"x":1,"y":2}}})", R"({"spec":{"a":{"$patch":"replace","z":3}}})") ==
        R"({"spec":{"a":{"z":3}}})");
}

TEST_CASE("a JSON patch applies add, remove, replace, move, copy and test", "[patch]") {
  CHECK(merged(PatchType::kJson, R"({"spec":{"taints":[{"key":"a"}]}})",
               R"([{"op":"add","path":"/spec/taints/-","value":{"key":"b"}},{"op":"add","path":"/spec/taints/0","value":{"key":"z"}},
                   {"op":"replace","path":"/spec/taints/1/key","value":"aa"},{"op":"copy","from":"/spec/taints/0","path":"/spec/first"},
                   {"op":"move","from":"/spec/first","path":"/spec/moved"},{"op":"test","path":"/spec/moved/key","value":"z"},
                   {"op":"remove","path":"/spec/taints/2"}])") == R"({"spec":{"taints":[{"key":"z"},{"key":"aa"}],"moved":{"key":"z"}}})");
  CHECK(merged(PatchType::kJson, R"({"metadata":{"labels":{"a/b":"1"}}})", R"([{"op":"remove","path":"/metadata/labels/a~1b"}])") ==
        R"({"metadata":{"labels":{}}})");
}

TEST_CASE("a failing JSON patch says which operation failed", "[patch]") {
  Doc t = parse(R"({"spec":{}})");
  auto r = json_patch(t, parse(R"([{"op":"test","path":"/spec","value":1}])"), t.GetAllocator());
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "testing value /spec failed: test failed");
  auto missing = json_patch(t, parse(R"([{"op":"add","path":"/spec/taints/-","value":1}])"), t.GetAllocator());
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message == "doc is missing path: \"/spec/taints/-\": missing value");
  auto bad_op = json_patch(t, parse(R"([{"op":"frob","path":"/spec"}])"), t.GetAllocator());
  REQUIRE_FALSE(bad_op);
}

namespace {
std::shared_ptr<const Schema> widget_schema() {
  Doc s = parse(R"({"type":"object","properties":{
      "spec":{"type":"object","required":["size"],"properties":{
        "size":{"type":"integer","minimum":1,"maximum":10},
        "mode":{"type":"string","enum":["fast","slow"],"default":"slow"},
        "delay":{"type":"string","pattern":"^[0-9]+[smh]$"},
        "budget":{"x-kubernetes-int-or-string":true},
        "tags":{"type":"array","maxItems":2,"items":{"type":"string","maxLength":5}},
        "labels":{"type":"object","additionalProperties":{"type":"string"}},
        "nested":{"type":"object","default":{},"properties":{"depth":{"type":"integer","default":3}}},
        "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
        "note":{"type":"string","nullable":true}}},
      "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}})");
  auto schema = Schema::parse(s);
  REQUIRE(schema);
  return *schema;
}

struct Applied {
  std::string json;
  std::vector<StatusCause> causes;
  std::vector<std::string> unknown;
};

Applied apply_schema(const std::string& obj) {
  Doc d = parse(obj);
  Applied out;
  widget_schema()->apply_root(d, d.GetAllocator(), out.causes, out.unknown);
  out.json = to_json(d);
  return out;
}
}  // namespace

TEST_CASE("a CRD schema prunes unknown fields and applies defaults", "[schema]") {
  auto a = apply_schema(R"({"apiVersion":"x/v1","kind":"W","metadata":{"name":"w","anything":1},"spec":{"size":2,"extra":true,
                            "free":{"kept":1},"labels":{"a":"b"}},"junk":1})");
  CHECK(a.causes.empty());
  CHECK(a.unknown == std::vector<std::string>{"spec.extra", "junk"});
  CHECK(a.json == R"({"apiVersion":"x/v1","kind":"W","metadata":{"name":"w","anything":1},"spec":{"size":2,"free":{"kept":1},)"
                  R"("labels":{"a":"b"},"mode":"slow","nested":{"depth":3}}})");
}

TEST_CASE("a CRD schema rejects bad values with field causes", "[schema]") {
  struct Case {
    const char* spec;
    const char* reason;
    const char* field;
    const char* message;
  };
  const Case cases[] = {
      {R"({})", "FieldValueRequired", "spec.size", "Required value"},
      {R"({"size":"3"})", "FieldValueTypeInvalid", "spec.size",
       "Invalid value: \"string\": spec.size in body must be of type integer: \"string\""},
      {R"({"size":0})", "FieldValueInvalid", "spec.size", "Invalid value: 0: spec.size in body should be greater than or equal to 1"},
      {R"({"size":11})", "FieldValueInvalid", "spec.size", "Invalid value: 11: spec.size in body should be less than or equal to 10"},
      {R"({"size":1,"mode":"medium"})", "FieldValueNotSupported", "spec.mode",
       "Unsupported value: \"medium\": supported values: \"fast\", \"slow\""},
      {R"({"size":1,"delay":"10 minutes"})", "FieldValueInvalid", "spec.delay",
       "Invalid value: \"10 minutes\": spec.delay in body should match '^[0-9]+[smh]$'"},
      {R"({"size":1,"budget":true})", "FieldValueInvalid", "spec.budget",
       "Invalid value: true: spec.budget in body must be of type integer or string: \"boolean\""},
      {R"({"size":1,"tags":["a","b","c"]})", "FieldValueTooMany", "spec.tags", "Too many: 3: must have at most 2 items"},
      {R"({"size":1,"tags":["toolong"]})", "FieldValueTooLong", "spec.tags[0]", "Too long: may not be longer than 5"},
      {R"({"size":1,"labels":{"a":1}})", "FieldValueTypeInvalid", "spec.labels.a",
       "Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\""},
  };
  for (const auto& c : cases) {
    INFO(c.spec);
    auto a = apply_schema(std::string(R"({"spec":)") + c.spec + "}");
    REQUIRE(a.causes.size() == 1);
    CHECK(a.causes[0].reason == c.reason);
    CHECK(a.causes[0].field == c.field);
    CHECK(a.causes[0].message == c.message);
  }
  // int-or-string accepts both; a nullable field accepts null; a non-nullable null is dropped.
  CHECK(apply_schema(R"({"spec":{"size":1,"budget":"50%","note":null}})").causes.empty());
  CHECK(apply_schema(R"({"spec":{"size":1,"budget":2,"mode":null}})").json ==
        R"({"spec":{"size":1,"budget":2,"mode":"slow","nested":{"depth":3}}})");
}

TEST_CASE("an invalid pattern in a schema is reported", "[schema]") {
  auto s = Schema::parse(parse(R"({"type":"string","pattern":"(unclosed"})"));
  REQUIRE_FALSE(s);
  CHECK_THAT(s.error().message, Catch::Contains("pattern \"(unclosed\" is not a valid regular expression"));
}
