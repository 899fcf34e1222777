#include "test_cluster.hpp"

using namespace spotshift;
using namespace spotshift::kubesim;
using testing::parse;
using testing::TestCluster;

namespace {
struct Event {
  std::string type;
  std::string name;
  std::string rv;
};

std::vector<Event> events(const std::string& chunk) {
  std::vector<Event> out;
  for (auto line : split(chunk, '\n')) {
    if (line.empty()) continue;
    Doc d = parse(std::string(line));
    out.push_back({std::string(json_string(d, {"type"})), std::string(json_string(d, {"object", "metadata", "name"})),
                   std::string(json_string(d, {"object", "metadata", "resourceVersion"}))});
  }
  return out;
}

std::vector<std::string> types(const std::vector<Event>& evs) {
  std::vector<std::string> out;
  for (const auto& e : evs) out.push_back(e.type + " " + e.name);
  return out;
}

std::shared_ptr<WatchStream> open(TestCluster& t, const std::string& path) {
  auto r = t.get(path);
  REQUIRE(r.status == 200);
  REQUIRE(r.watch);
  return r.watch;
}
}  // namespace

TEST_CASE("a watch without a resourceVersion starts with synthetic ADDED events", "[watch]") {
  TestCluster t({}, "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: b}\n");
  auto w = open(t, "/api/v1/nodes?watch=true");
  CHECK(types(events(w->poll())) == std::vector<std::string>{"ADDED a", "ADDED b"});
  t.post("/api/v1/nodes", R"({"metadata":{"name":"c"}})");
  t.request("PATCH", "/api/v1/nodes/a", R"({"metadata":{"labels":{"x":"y"}}})", "application/merge-patch+json");
  t.request("DELETE", "/api/v1/nodes/b");
  auto evs = events(w->poll());
  CHECK(types(evs) == std::vector<std::string>{"ADDED c", "MODIFIED a", "DELETED b"});
  CHECK(evs[2].rv == std::to_string(t.cluster().store().resource_version()));  // DELETED has a new RV
  CHECK(w->poll().empty());
}

TEST_CASE("a watch from a resourceVersion replays only later changes", "[watch]") {
  TestCluster t;
  t.post("/api/v1/nodes", R"({"metadata":{"name":"a"}})");
  uint64_t rv = t.cluster().store().resource_version();
  t.post("/api/v1/nodes", R"({"metadata":{"name":"b"}})");
  auto w = open(t, "/api/v1/nodes?watch=1&resourceVersion=" + std::to_string(rv));
  CHECK(types(events(w->poll())) == std::vector<std::string>{"ADDED b"});
}

TEST_CASE("objects entering and leaving a selector are ADDED and DELETED", "[watch]") {
  TestCluster t;
  t.post("/api/v1/nodes", R"({"metadata":{"name":"a","labels":{"pool":"spot"}}})");
  auto w = open(t, "/api/v1/nodes?watch=true&labelSelector=pool%3Dspot");
  CHECK(types(events(w->poll())) == std::vector<std::string>{"ADDED a"});
  t.request("PATCH", "/api/v1/nodes/a", R"({"metadata":{"labels":{"pool":"od"}}})", "application/merge-patch+json");
  t.post("/api/v1/nodes", R"({"metadata":{"name":"b","labels":{"pool":"od"}}})");
  t.request("PATCH", "/api/v1/nodes/b", R"({"metadata":{"labels":{"pool":"spot"}}})", "application/merge-patch+json");
  CHECK(types(events(w->poll())) == std::vector<std::string>{"DELETED a", "ADDED b"});
}

TEST_CASE("bookmarks carry the resourceVersion and mark the end of initial events", "[watch]") {
  TestCluster t;
  t.post("/api/v1/nodes", R"({"metadata":{"name":"a"}})");
  auto w = open(t, "/api/v1/nodes?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true");
  std::string first = w->poll();
  auto evs = events(first);
  REQUIRE(evs.size() == 2);
  CHECK(evs[0].type == "ADDED");
  CHECK(evs[1].type == "BOOKMARK");
  CHECK(first.find(R"("k8s.io/initial-events-end":"true")") != std::string::npos);
  t.post("/api/v1/nodes", R"({"metadata":{"name":"b"}})");
  auto later = events(w->bookmark());
  REQUIRE(later.size() == 2);  // pending events come before the bookmark
  CHECK(later[0].type == "ADDED");
  CHECK(later[1].type == "BOOKMARK");
  CHECK(later[1].rv == std::to_string(t.cluster().store().resource_version()));
  auto plain = open(t, "/api/v1/nodes?watch=true");
  CHECK(events(plain->bookmark()).size() == 2);  // no bookmarks unless asked: only the ADDEDs
}

TEST_CASE("a watch from a compacted resourceVersion ends with an ERROR 410 event", "[watch]") {
  TestCluster t;
  for (auto n : {"a", "b", "c"}) t.post("/api/v1/nodes", std::string(R"({"metadata":{"name":")") + n + R"("}})");
  t.cluster().store().compact(t.cluster().store().resource_version());
  auto w = open(t, "/api/v1/nodes?watch=true&resourceVersion=2");
  std::string out = w->poll();
  INFO(out);
  CHECK(
      out.find(
          R"x({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 2 ()x") ==
      0);
  CHECK(out.find(R"("reason":"Expired","code":410}})") != std::string::npos);
  CHECK(w->finished());

  t.cluster().faults().expire_next_watch("nodes");
  auto forced = open(t, "/api/v1/nodes?watch=true");
  CHECK(forced->poll().find("\"code\":410") != std::string::npos);
  auto normal = open(t, "/api/v1/nodes?watch=true");
  CHECK(normal->poll().find("ADDED") != std::string::npos);
}

TEST_CASE("a watcher that falls out of the history window is told to relist", "[watch]") {
  ClusterOptions o;
  o.history_limit = 5;
  TestCluster t(o);
  auto w = open(t, "/api/v1/nodes?watch=true");
  w->poll();
  for (int i = 0; i < 10; ++i) t.post("/api/v1/nodes", R"({"metadata":{"name":"n)" + std::to_string(i) + R"("}})");
  CHECK(w->poll().find("\"code\":410") != std::string::npos);
}

TEST_CASE("a watch on one object and kubectl's table watch", "[watch]") {
  TestCluster t;
  t.post("/api/v1/nodes", R"({"metadata":{"name":"a"}})");
  t.post("/api/v1/nodes", R"({"metadata":{"name":"b"}})");
  auto one = open(t, "/api/v1/watch/nodes/b");
  CHECK(types(events(one->poll())) == std::vector<std::string>{"ADDED b"});
  auto table = t.request("GET", "/api/v1/nodes?watch=true", "", "", "application/json;as=Table;v=v1;g=meta.k8s.io");
  std::string line = table.watch->poll();
  CHECK(line.find(R"({"type":"ADDED","object":{"kind":"Table")") == 0);
}
