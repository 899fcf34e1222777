#include "model/pod.hpp"
#include "runtime/store.hpp"
#include "support/catch.hpp"

using namespace spotshift;
using namespace spotshift::model;
using spotshift::runtime::Store;

namespace {
std::shared_ptr<const Pod> pod(std::string name, std::string node, std::string rv = "1") {
  Pod p;
  p.meta.name = std::move(name);
  p.meta.namespace_ = InternedString("default");
  p.meta.resource_version = std::move(rv);
  p.node_name = InternedString(node);
  return std::make_shared<const Pod>(std::move(p));
}

Store<Pod> pods_by_node() {
  Store<Pod> s([](const Pod& p) { return p.key(); });
  s.add_index("node", [](const Pod& p, std::vector<std::string>& out) {
    if (!p.node_name.empty()) out.push_back(p.node_name.str());
  });
  return s;
}

std::vector<std::string> names(const Store<Pod>::Bucket& b) {
  std::vector<std::string> out;
  for (const auto& p : *b) out.push_back(p->name());
  return out;
}
}  // namespace

TEST_CASE("a snapshot is a consistent view that later writes do not change", "[store]") {
  auto s = pods_by_node();
  s.upsert(pod("a", "n1"));
  s.upsert(pod("b", "n1"));
  auto before = s.snapshot();
  s.upsert(pod("c", "n2"));
  s.upsert(pod("a", "n2", "2"));
  s.erase("default/b");
  CHECK(before->size() == 2);
  CHECK(before->get("default/a")->node_name.view() == "n1");
  CHECK(before->get("default/c") == nullptr);
  CHECK(names(before->index("node", "n1")) == std::vector<std::string>{"a", "b"});
  auto after = s.snapshot();
  CHECK(after->size() == 2);
  CHECK(after->get("default/b") == nullptr);
  CHECK(names(after->index("node", "n2")) == std::vector<std::string>{"a", "c"});
  CHECK(after->index("node", "n1")->empty());
  CHECK(after->version() > before->version());
}

TEST_CASE("snapshots share everything that did not change", "[store]") {
  auto s = pods_by_node();
  for (int i = 0; i < 1000; ++i) s.upsert(pod("p" + std::to_string(i), "n" + std::to_string(i % 10)));
  auto one = s.snapshot();
  CHECK(s.snapshot() == one);  // no writes: the same snapshot
  s.upsert(pod("p3", "n3", "2"));
  auto two = s.snapshot();
  CHECK(two != one);
  // The bucket of an untouched node is the very same object; the touched node's is new.
  CHECK(two->index("node", "n4") == one->index("node", "n4"));
  CHECK(two->index("node", "n3") != one->index("node", "n3"));
  // Unchanged objects are shared, not copied.
  CHECK(two->get("default/p7") == one->get("default/p7"));
  size_t seen = 0;
  two->for_each([&](const auto&) { ++seen; });
  CHECK(seen == 1000);
  int values = 0;
  two->for_each_value("node", [&](const std::string&, const auto& bucket) { values += static_cast<int>(bucket->size()); });
  CHECK(values == 1000);
}

TEST_CASE("the writer's view reads the latest state and indexes follow moves", "[store]") {
  auto s = pods_by_node();
  CHECK(s.upsert(pod("a", "n1")) == nullptr);
  auto prev = s.upsert(pod("a", "n2", "2"));
  REQUIRE(prev);
  CHECK(prev->meta.resource_version == "1");
  CHECK(s.get("default/a")->meta.resource_version == "2");
  CHECK(s.erase("default/missing") == nullptr);
  auto snap = s.snapshot();
  CHECK(snap->index("node", "n1")->empty());
  CHECK(names(snap->index("node", "n2")) == std::vector<std::string>{"a"});
  CHECK(snap->index("nothing", "x")->empty());
  CHECK(s.keys() == std::vector<std::string>{"default/a"});
}

TEST_CASE("values() is every object, rebuilt only after a write", "[store]") {
  auto s = pods_by_node();
  CHECK(s.values().empty());
  s.upsert(pod("a", "n1"));
  s.upsert(pod("b", "n2"));
  auto names_of = [](const std::vector<Store<Pod>::Ptr>& v) {
    std::vector<std::string> out;
    for (const auto& p : v) out.push_back(p->name());
    std::sort(out.begin(), out.end());
    return out;
  };
  CHECK(names_of(s.values()) == std::vector<std::string>{"a", "b"});
  const auto* data = s.values().data();
  CHECK(s.values().data() == data);  // no write in between: the same vector, not rebuilt
  auto a2 = pod("a", "n3", "2");
  s.upsert(a2);
  REQUIRE(s.values().size() == 2);
  CHECK(std::find(s.values().begin(), s.values().end(), a2) != s.values().end());
  s.erase("default/b");
  CHECK(names_of(s.values()) == std::vector<std::string>{"a"});
  s.erase("default/a");
  CHECK(s.values().empty());
}
