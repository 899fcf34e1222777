// lib/runtime against kubesim over HTTP: the real client, real informers and real leases.

#include "core/strings.hpp"
#include "kube/client.hpp"
#include "leader_manager.hpp"
#include "runtime/events.hpp"
#include "runtime/informer.hpp"
#include "runtime/leader.hpp"
#include "runtime/manager.hpp"
#include "runtime/spawn.hpp"
#include "simulator.hpp"
#include "support/asio_run.hpp"
#include "support/catch.hpp"
#include "support/process.hpp"
#include "support/sim_client.hpp"

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>

#include <map>
#include <thread>

using namespace spotshift;
using namespace spotshift::runtime;
using namespace std::chrono_literals;
using spotshift::testing::run_for;
using spotshift::testing::run_sync;

namespace {

// kubesim, started, and the io_context and timers the code under test runs on, declared after
// the simulator: coroutines still pending when the loop goes never outlive what they point to.
struct SimLoop {
  explicit SimLoop(const kubesim::SimulatorOptions& o) : sim(o) { REQUIRE(sim.start()); }
  explicit SimLoop(std::string scenario = {}) : SimLoop(with_scenario(std::move(scenario))) {}
  static kubesim::SimulatorOptions with_scenario(std::string scenario) {
    kubesim::SimulatorOptions o;
    o.scenario_text = std::move(scenario);
    return o;
  }
  kubesim::Simulator sim;
  boost::asio::io_context ioc;
  Timers timers{ioc.get_executor(), SystemClock::instance()};
};

// A candidate's options: a 3 s lease, renewed within 2 s, tried every 200 ms.
LeaderElectionOptions leader_options(std::string id) {
  LeaderElectionOptions o;
  o.namespace_ = "default";
  o.name = "spotshift-leader";
  o.identity = std::move(id);
  o.lease_duration = 3s;
  o.renew_deadline = 2s;
  o.retry_period = 200ms;
  return o;
}

std::string nodes_scenario(int n) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += fmt::format(
        "---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{:02}, labels: {{pool: p{}}}}}\n"
        "status: {{allocatable: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}}}\n",
        i, i % 2);
  return s;
}

std::shared_ptr<kube::Client> client_for(boost::asio::io_context& ioc, const kubesim::Simulator& sim, std::string agent = "runtime-test") {
  auto client = spotshift::testing::sim_client(ioc, sim, std::move(agent));
  REQUIRE(client);
  return *client;
}

std::map<std::string, std::string> server_nodes(kubesim::Simulator& sim) {
  std::map<std::string, std::string> out;
  sim.run([&](kubesim::Cluster& c) {
    for (const auto& [k, o] : c.store().objects(*c.registry().nodes())) out[k] = std::to_string(o->rv);
  });
  return out;
}

template <class T>
std::map<std::string, std::string> cached(Store<T>& s) {
  std::map<std::string, std::string> out;
  s.for_each([&](const auto& p) { out[p->meta.key()] = p->meta.resource_version; });
  return out;
}

// Runs ioc until pred() holds or the timeout passes.
bool run_until(boost::asio::io_context& ioc, const std::function<bool()>& pred, std::chrono::milliseconds timeout = 20s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    run_for(ioc, 20ms);
  }
  return true;
}

}  // namespace

TEST_CASE("after dropped watches, forced 410s and a burst of changes the store equals kubesim", "[informer]") {
  kubesim::SimulatorOptions o = SimLoop::with_scenario(nodes_scenario(20));
  o.bookmark_interval = 200ms;
  SimLoop loop(o);
  auto& [sim, ioc, timers] = loop;
  auto client = client_for(ioc, sim);
  Informer<model::Node>::Options io;
  io.page_size = 7;
  io.backoff.initial = 10ms;
  io.backoff.max = 100ms;
  Informer<model::Node> informer("nodes", client, timers, io);
  int added = 0, updated = 0, deleted = 0;
  informer.on_event([&](const ObjectEvent<model::Node>& e) {
    if (e.type == ObjectEvent<model::Node>::Type::kAdded) ++added;
    if (e.type == ObjectEvent<model::Node>::Type::kUpdated) ++updated;
    if (e.type == ObjectEvent<model::Node>::Type::kDeleted) ++deleted;
  });
  spawn(ioc.get_executor(), informer.run(), "informer");
  REQUIRE(run_sync(ioc, informer.wait_synced(10s)));
  CHECK(added == 20);
  CHECK(cached(informer.store()) == server_nodes(sim));

  auto churn = [&](int round) {
    sim.run([&](kubesim::Cluster& c) {
      const auto& nodes = *c.registry().nodes();
      for (int i = 0; i < 10; ++i) {
        std::string name = fmt::format("n{:02}", (round * 7 + i) % 20);
        c.mutate(nodes, name, [&](kubesim::Value& obj, kubesim::Alloc& a) {
          kubesim::set_str(kubesim::ensure_object(kubesim::ensure_object(obj, "metadata", a), "labels", a), "round",
                           std::to_string(round * 100 + i), a);
        });
      }
      kubesim::Doc d;
      d.Parse(fmt::format(R"({{"apiVersion":"v1","kind":"Node","metadata":{{"name":"extra-{}"}}}})", round).c_str());
      REQUIRE(c.create(nodes, "", std::move(d)));
      if (round > 0) c.erase(nodes, fmt::format("extra-{}", round - 1));
    });
  };
  churn(0);
  REQUIRE(run_until(ioc, [&] { return cached(informer.store()) == server_nodes(sim); }));
  sim.drop_watches();
  churn(1);
  REQUIRE(run_until(ioc, [&] { return cached(informer.store()) == server_nodes(sim); }));
  sim.faults().expire_next_watch("nodes");
  sim.drop_watches();
  churn(2);
  REQUIRE(run_until(ioc, [&] { return cached(informer.store()) == server_nodes(sim); }));
  // Compaction past the informer's resourceVersion: the relist from that version fails too, so
  // it lists from scratch.
  sim.run([](kubesim::Cluster& c) { c.store().compact(c.store().resource_version()); });
  sim.faults().expire_next_watch("nodes");
  sim.drop_watches();
  churn(3);
  REQUIRE(run_until(ioc, [&] { return cached(informer.store()) == server_nodes(sim); }));

  CHECK(informer.stats().relists_after_expiry >= 2);
  CHECK(informer.stats().watches >= 4);
  CHECK(deleted >= 3);
  informer.stop();
  run_for(ioc, 50ms);
}

TEST_CASE("a listed pod that does not decode is skipped and counted; the rest are trimmed and stored", "[informer]") {
  kubesim::SimulatorOptions o;
  for (int i = 0; i < 5; ++i)
    o.scenario_text += fmt::format(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{}, namespace: default}}\n"
        "spec: {{containers: [{{name: c, image: i}}]}}\n",
        i);
  kubesim::Simulator sim(o);
  REQUIRE(sim.start());
  // Stored past kubesim's validation, as a newer apiserver's object might read to this client.
  sim.run([](kubesim::Cluster& c) {
    c.mutate(*c.registry().pods(), "default/p2",
             [](kubesim::Value& obj, kubesim::Alloc& a) { kubesim::set_str(*kubesim::get_mut(obj, "spec"), "priority", "high", a); });
  });
  boost::asio::io_context ioc;
  Timers timers(ioc.get_executor(), SystemClock::instance());
  Informer<model::Pod>::Options opts;
  opts.page_size = 2;  // the bad pod in the middle page
  opts.transform = [](model::Pod& p) { p.do_not_move = true; };
  Informer<model::Pod> informer("pods", client_for(ioc, sim), timers, opts);
  std::vector<std::string> added;
  informer.on_event([&](const ObjectEvent<model::Pod>& e) {
    if (e.type == ObjectEvent<model::Pod>::Type::kAdded) added.push_back(e.object->meta.key());
  });
  spawn(ioc.get_executor(), informer.run(), "informer");
  REQUIRE(run_sync(ioc, informer.wait_synced(10s)));
  CHECK(informer.stats().decode_errors == 1);
  CHECK(added == std::vector<std::string>{"default/p0", "default/p1", "default/p3", "default/p4"});
  REQUIRE(informer.store().size() == 4);
  informer.store().for_each([](const auto& p) { CHECK(p->do_not_move); });
  CHECK_FALSE(informer.store().get("default/p2"));
  informer.stop();
}

TEST_CASE("heartbeat-only node updates are not content changes", "[informer]") {
  SimLoop loop(nodes_scenario(1));
  auto& [sim, ioc, timers] = loop;
  Informer<model::Node> informer("nodes", client_for(ioc, sim), timers, {});
  int changes = 0, updates = 0;
  informer.on_event([&](const ObjectEvent<model::Node>& e) {
    if (e.type != ObjectEvent<model::Node>::Type::kUpdated) return;
    ++updates;
    if (content_changed(e)) ++changes;
  });
  spawn(ioc.get_executor(), informer.run(), "informer");
  REQUIRE(run_sync(ioc, informer.wait_synced(10s)));
  sim.run([](kubesim::Cluster& c) {
    c.mutate(*c.registry().nodes(), "n00", [](kubesim::Value& obj, kubesim::Alloc& a) {
      for (auto& cond : (*kubesim::get_mut(*kubesim::get_mut(obj, "status"), "conditions")).GetArray())
        kubesim::set_str(cond, "lastHeartbeatTime", "2030-01-01T00:00:00Z", a);
    });
  });
  REQUIRE(run_until(ioc, [&] { return updates == 1; }));
  CHECK(changes == 0);
  sim.run([](kubesim::Cluster& c) {
    c.mutate(*c.registry().nodes(), "n00", [](kubesim::Value& obj, kubesim::Alloc& a) {
      kubesim::set_bool(kubesim::ensure_object(obj, "spec", a), "unschedulable", true, a);
    });
  });
  REQUIRE(run_until(ioc, [&] { return updates >= 2; }));
  CHECK(changes >= 1);
  informer.stop();
}

TEST_CASE("two candidates: exactly one leads, and a released lease passes at once", "[leader]") {
  SimLoop loop;
  auto& [sim, ioc, timers] = loop;
  REQUIRE(leader_options("a").validate());
  REQUIRE(leader_options("b").validate());
  LeaderElector a(client_for(ioc, sim, "cand-a"), timers, leader_options("a"));
  LeaderElector b(client_for(ioc, sim, "cand-b"), timers, leader_options("b"));
  int a_started = 0, b_started = 0, a_stopped = 0;
  spawn(ioc.get_executor(), a.run([&] { ++a_started; }, [&] { ++a_stopped; }), "a");
  REQUIRE(run_until(ioc, [&] { return a.leading(); }));
  spawn(ioc.get_executor(), b.run([&] { ++b_started; }, [] {}), "b");
  run_for(ioc, 1s);
  CHECK(a.leading());
  CHECK_FALSE(b.leading());
  CHECK(b.holder() == "a");
  // a stops and releases: b takes over well before the lease would have expired.
  auto released = std::chrono::steady_clock::now();
  a.stop();
  REQUIRE(run_until(
      ioc, [&] { return b.leading(); }, 5s));
  CHECK(std::chrono::steady_clock::now() - released < 2s);
  CHECK(a_stopped == 1);
  CHECK(b_started == 1);
  CHECK(a_started == 1);
  b.stop();
  run_for(ioc, 300ms);
  LeaderElectionOptions bad = leader_options("x");
  bad.renew_deadline = 5s;
  CHECK_FALSE(bad.validate());
}

TEST_CASE("a leader cut off from the apiserver stops acting before another takes over", "[leader]") {
  SimLoop loop;
  auto& [sim, ioc, timers] = loop;
  LeaderElector a(client_for(ioc, sim, "cand-a"), timers, leader_options("a"));
  LeaderElector b(client_for(ioc, sim, "cand-b"), timers, leader_options("b"));
  std::chrono::steady_clock::time_point a_stopped_at, b_started_at;
  spawn(ioc.get_executor(), a.run([] {}, [&] { a_stopped_at = std::chrono::steady_clock::now(); }), "a");
  REQUIRE(run_until(ioc, [&] { return a.leading(); }));
  spawn(ioc.get_executor(), b.run([&] { b_started_at = std::chrono::steady_clock::now(); }, [] {}), "b");
  run_for(ioc, 500ms);
  // Partition a: every request it sends fails.
  kubesim::FaultRule cut;
  cut.user_agent = "cand-a";
  cut.status = 503;
  sim.faults().add(cut);
  auto cut_at = std::chrono::steady_clock::now();
  REQUIRE(run_until(
      ioc, [&] { return b.leading(); }, 10s));
  CHECK_FALSE(a.leading());
  CHECK(a_stopped_at.time_since_epoch().count() > 0);
  CHECK(a_stopped_at < b_started_at);                      // never both
  CHECK(b_started_at - a_stopped_at >= 500ms);             // the renew deadline leaves a margin
  CHECK(b_started_at - cut_at <= 3s + 200ms * 2 + 500ms);  // within lease duration plus retries
  b.stop();
  a.stop();
  run_for(ioc, 300ms);
}

TEST_CASE("recorded events reach events.k8s.io, read well in kubectl events, and repeats become a series", "[events]") {
  spotshift::testing::require_tool("kubectl");
  SimLoop loop(nodes_scenario(1));
  auto& [sim, ioc, timers] = loop;
  spotshift::testing::TempDir dir;
  REQUIRE(sim.write_kubeconfig(dir.file("kubeconfig")));
  EventRecorderOptions eo;
  eo.reporting_instance = "spotshift-test-1";
  eo.spam_burst = 5;
  EventRecorder recorder(client_for(ioc, sim), timers, eo);
  spawn(ioc.get_executor(), recorder.run(), "recorder");
  ObjectReference node{"v1", "Node", "", "n00", "", ""};
  recorder.record(node, {"DrainStarted", "Drain", EventType::kNormal}, "Started draining n00: 2 pods will move to spot nodes.");
  recorder.record(node, {"NodeNotDrainable", "Plan", EventType::kWarning},
                  "n00 is not drainable: pod shop/db-0 is pinned to on-demand nodes.");
  recorder.record(node, {"NodeNotDrainable", "Plan", EventType::kWarning},
                  "n00 is not drainable: pod shop/db-0 is pinned to on-demand nodes.");
  REQUIRE(run_until(ioc, [&] { return recorder.stats().created == 2 && recorder.stats().series_updates == 1; }));
  // A note over the API server's 1024 bytes is cut, at a character boundary: a character cut in
  // two would not be valid UTF-8 (and would come back longer, as U+FFFD).
  std::string long_note = "x";
  for (int i = 0; i < 600; ++i) long_note += "\xc3\xa9";  // é
  recorder.record(node, {"LongNote", "Plan", EventType::kNormal}, long_note);
  REQUIRE(run_until(ioc, [&] { return recorder.stats().created == 3 || recorder.stats().failed > 0; }));
  CHECK(recorder.stats().failed == 0);
  for (int i = 0; i < 10; ++i) recorder.record(node, {"Spam", "Plan", EventType::kNormal}, "again " + std::to_string(i));
  REQUIRE(run_until(ioc, [&] { return recorder.stats().recorded == 14; }));
  CHECK(recorder.stats().dropped_spam == 7);  // DrainStarted and LongNote took two of the 5 Normal tokens for n00
  auto events =
      spotshift::testing::run(fmt::format("kubectl --kubeconfig {} --cache-dir {} events -A", dir.file("kubeconfig"), dir.file("cache")));
  INFO(events.output);
  REQUIRE(events.status == 0);
  CHECK(events.output.find("Normal    DrainStarted       Node/n00   Started draining n00: 2 pods will move to spot nodes.") !=
        std::string::npos);
  CHECK(events.output.find("(x2 over") != std::string::npos);
  CHECK(events.output.find("NodeNotDrainable") != std::string::npos);
  recorder.stop();
  run_for(ioc, 100ms);
}

TEST_CASE("the manager waits for caches, serves probes and metrics, and shuts down cleanly", "[manager]") {
  spotshift::testing::require_tool("curl");
  SimLoop loop(nodes_scenario(3));
  auto& [sim, ioc, timers] = loop;
  auto client = client_for(ioc, sim);
  Metrics metrics;
  metrics.set_build_info("test", "none");
  ManagerOptions mo = runtime::testing::leader_elected("mgr", "mgr-1", "127.0.0.1:0");
  mo.handle_signals = false;
  Manager manager(ioc.get_executor(), client, timers, metrics, mo);
  Informer<model::Node> nodes("nodes", client, timers, {});
  manager.add_informer(nodes);
  struct Counting final : Reconciler {
    int n = 0;
    boost::asio::awaitable<Result<Action>> reconcile(const std::string&) override {
      ++n;
      co_return Action::done();
    }
  } reconciler;
  WorkQueue queue(timers);
  Controller controller("nodes", reconciler, queue, timers, {});
  nodes.on_event([&](const ObjectEvent<model::Node>& e) { queue.add(e.object->meta.key()); });
  manager.add_controller(controller);
  bool hook_ran = false;
  manager.on_leading([&]() -> boost::asio::awaitable<void> {
    hook_ran = true;
    co_return;
  });
  std::optional<int> exit_code;
  boost::asio::co_spawn(
      ioc, [&]() -> boost::asio::awaitable<void> { exit_code = co_await manager.run(); },
      [](std::exception_ptr e) { log_exception("manager", e); });
  REQUIRE(run_until(ioc, [&] { return manager.leading() && reconciler.n == 3; }));
  CHECK(hook_ran);
  // curl runs on another thread while this one keeps the io_context (and so the servers) going.
  std::string metrics_text, readyz;
  std::thread fetch([&] {
    metrics_text = spotshift::testing::run(fmt::format("curl -s --max-time 5 http://127.0.0.1:{}/metrics", manager.metrics_port())).output;
    readyz = spotshift::testing::run(fmt::format("curl -s --max-time 5 http://127.0.0.1:{}/readyz", manager.probe_port())).output;
  });
  run_until(
      ioc, [&] { return !readyz.empty(); }, 10s);
  fetch.join();
  CHECK(readyz == "ok\n");
  CHECK(metrics_text.find("spotshift_leader 1") != std::string::npos);
  CHECK(metrics_text.find("spotshift_build_info{version=\"test\",revision=\"none\"} 1") != std::string::npos);
  manager.shutdown();
  REQUIRE(run_until(ioc, [&] { return exit_code.has_value(); }));
  CHECK(*exit_code == 0);
  // The lease was released on the way out.
  std::string holder = "?";
  sim.run([&](kubesim::Cluster& c) {
    auto lease = c.store().get(*c.registry().leases(), "default/mgr");
    if (lease) holder = std::string(kubesim::json_string(lease->doc, {"spec", "holderIdentity"}));
  });
  CHECK(holder.empty());
}
