#include "store.hpp"
#include "test_cluster.hpp"

using namespace spotshift;
using namespace spotshift::kubesim;
using testing::parse;

namespace {
Doc pod(const std::string& ns, const std::string& name, const std::string& extra = "") {
  return parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"namespace":")" + ns + R"(","name":")" + name + R"("})" + extra + "}");
}
std::vector<std::string> keys(const std::vector<ObjectPtr>& objs) {
  std::vector<std::string> out;
  for (const auto& o : objs) out.push_back(o->key);
  return out;
}
}  // namespace

TEST_CASE("every write bumps one global resourceVersion and is recorded", "[store]") {
  Registry reg;
  Store s(100);
  auto a = s.put(*reg.pods(), pod("ns", "a"));
  auto n = s.put(*reg.nodes(), parse(R"({"metadata":{"name":"n1"}})"));
  auto a2 = s.put(*reg.pods(), pod("ns", "a", R"(,"spec":{"x":1})"));
  CHECK(a->rv == 1);
  CHECK(n->rv == 2);
  CHECK(a2->rv == 3);
  CHECK(json_string(a2->doc, {"metadata", "resourceVersion"}) == "3");
  auto gone = s.erase(*reg.pods(), "ns/a");
  REQUIRE(gone);
  CHECK(gone->rv == 4);  // DELETED carries the last state with a new resourceVersion
  REQUIRE(s.history().size() == 4);
  CHECK(s.history()[2].type == EventType::kModified);
  CHECK(s.history()[2].prev == a);
  CHECK(s.history()[3].type == EventType::kDeleted);
  CHECK(s.first_after(2) == 2);
}

TEST_CASE("a list at an older resourceVersion is the snapshot of that moment", "[store]") {
  Registry reg;
  Store s(100);
  s.put(*reg.pods(), pod("ns", "a"));
  s.put(*reg.pods(), pod("ns", "b"));
  uint64_t at = s.resource_version();
  s.put(*reg.pods(), pod("ns", "c"));                              // created later: absent
  s.erase(*reg.pods(), "ns/a");                                    // deleted later: present
  s.put(*reg.pods(), pod("ns", "b", R"(,"spec":{"changed":1})"));  // changed later: old state
  auto all = [](const StoredObject&) { return true; };
  bool more = false;
  auto snap = s.list_at(*reg.pods(), at, "", "", 0, all, &more);
  REQUIRE(snap);
  CHECK(keys(*snap) == std::vector<std::string>{"ns/a", "ns/b"});
  CHECK_FALSE(json_path((*snap)[1]->doc, {"spec"}));
  auto page = s.list_at(*reg.pods(), at, "", "", 1, all, &more);
  CHECK(keys(*page) == std::vector<std::string>{"ns/a"});
  CHECK(more);
  auto next = s.list_at(*reg.pods(), at, "", "ns/a", 1, all, &more);
  CHECK(keys(*next) == std::vector<std::string>{"ns/b"});
  CHECK_FALSE(more);
  auto now = s.list_at(*reg.pods(), s.resource_version(), "", "", 0, all, &more);
  CHECK(keys(*now) == std::vector<std::string>{"ns/b", "ns/c"});
}

TEST_CASE("lists scoped to a namespace see only its keys", "[store]") {
  Registry reg;
  Store s(100);
  for (auto ns : {"a", "ab", "b"})
    for (auto name : {"x", "y"}) s.put(*reg.pods(), pod(ns, name));
  bool more = false;
  auto r = s.list_at(
      *reg.pods(), s.resource_version(), "a/", "", 0, [](const StoredObject&) { return true; }, &more);
  CHECK(keys(*r) == std::vector<std::string>{"a/x", "a/y"});
}

TEST_CASE("compaction makes older resourceVersions expire", "[store]") {
  Registry reg;
  Store s(3);
  for (int i = 0; i < 5; ++i) s.put(*reg.pods(), pod("ns", "p" + std::to_string(i)));
  CHECK(s.history().size() == 3);
  CHECK_FALSE(s.can_resume(1));
  CHECK(s.can_resume(2));
  auto old = s.list_at(
      *reg.pods(), 1, "", "", 0, [](const StoredObject&) { return true; }, nullptr);
  REQUIRE_FALSE(old);
  CHECK(old.error().code == 410);
  CHECK(old.error().message == "too old resource version: 1 (3)");
  s.compact(5);
  CHECK(s.history().empty());
  CHECK_FALSE(s.can_resume(4));
  CHECK(s.can_resume(5));
}

TEST_CASE("a write that changes nothing but resourceVersion is not a write", "[store]") {
  testing::TestCluster t({}, "apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {app: web}}\nspec: {containers: [{name: c}]}\n");
  const auto& pods = *t.cluster().registry().pods();
  auto before = t.pod("default/a");
  uint64_t rv = t.cluster().store().resource_version();
  auto write = [&](const std::function<void(Value&, Alloc&)>& fn) { return t.cluster().mutate(pods, "default/a", fn).value(); };

  CHECK(write([](Value&, Alloc&) {}) == before);
  CHECK(write([](Value& o, Alloc& a) { set_str(*get_mut(o, "metadata"), "resourceVersion", "1", a); }) == before);
  CHECK(write([](Value& o, Alloc& a) { set_str(*get_mut(*get_mut(o, "metadata"), "labels"), "app", "web", a); }) == before);
  CHECK(t.cluster().store().resource_version() == rv);

  // Any other difference, at any depth, in metadata or elsewhere, is a write.
  auto changed = [&](const std::function<void(Value&, Alloc&)>& fn) {
    auto after = write(fn);
    bool bumped = after != before && after->rv > before->rv;
    before = after;
    return bumped;
  };
  CHECK(changed([](Value& o, Alloc& a) { set_str(*get_mut(*get_mut(o, "metadata"), "labels"), "app", "api", a); }));
  CHECK(changed([](Value& o, Alloc& a) { set_str(*get_mut(o, "metadata"), "generateName", "a-", a); }));
  CHECK(changed([](Value& o, Alloc&) { drop_field(*get_mut(o, "metadata"), "labels"); }));
  CHECK(changed([](Value& o, Alloc& a) { set_str(*get_mut(*get_mut(o, "spec"), "containers")->Begin(), "image", "x", a); }));
  CHECK(changed([](Value& o, Alloc&) { drop_field(o, "spec"); }));
  // A stored version keeps its document and text after later writes replace it.
  CHECK(json_string(before->doc, {"metadata", "generateName"}) == "a-");
  CHECK(before->json.find("\"generateName\":\"a-\"") != std::string::npos);
}
