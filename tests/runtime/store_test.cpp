#include "runtime/store.hpp"
#include "model/pod.hpp"
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

Store<Pod> pods() {
  return Store<Pod>([](const Pod& p) { return p.key(); });
}
}  // namespace

TEST_CASE("the store reads the latest state, and a write returns what it replaced", "[store]") {
  auto s = pods();
  CHECK(s.upsert(pod("a", "n1")) == nullptr);
  auto prev = s.upsert(pod("a", "n2", "2"));
  REQUIRE(prev);
  CHECK(prev->meta.resource_version == "1");
  CHECK(s.get("default/a")->meta.resource_version == "2");
  CHECK(s.erase("default/missing") == nullptr);
  CHECK(s.size() == 1);
  CHECK(s.keys() == std::vector<std::string>{"default/a"});
}

TEST_CASE("values() is every object, rebuilt only after a write", "[store]") {
  auto s = pods();
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
