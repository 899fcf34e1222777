// Two operator processes elect a leader through kubesim; the leader is killed with SIGKILL; the
// other takes over within 20 s, and the audit log shows that the two never acted at once.

#include "simulator.hpp"
#include "support/catch.hpp"
#include "support/process.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

#include <thread>

using namespace spotshift;
using spotshift::testing::eventually;
using spotshift::testing::run;
using spotshift::testing::TempDir;

namespace {
std::string holder(kubesim::Simulator& sim) {
  std::string h;
  sim.run([&](kubesim::Cluster& c) {
    if (auto l = c.store().get(*c.registry().leases(), "default/leader-demo"))
      h = std::string(kubesim::json_string(l->doc, {"spec", "holderIdentity"}));
  });
  return h;
}
}  // namespace

TEST_CASE("of two processes one leads; after kill -9 the other leads within 20 s; never both act", "[leader-processes]") {
  kubesim::SimulatorOptions o;
  o.scenario_text = "apiVersion: v1\nkind: Node\nmetadata: {name: target}\n";
  kubesim::Simulator sim(o);
  REQUIRE(sim.start());
  TempDir dir;
  REQUIRE(sim.write_kubeconfig(dir.file("kubeconfig")));
  std::map<std::string, std::string> pids;
  for (std::string id : {"alpha", "beta"}) {
    auto r = run(fmt::format("{} {} {} target >{} 2>&1 & echo $!", LEADER_DEMO, dir.file("kubeconfig"), id, dir.file(id + ".log")));
    pids[id] = std::string(trim(r.output));
  }
  REQUIRE(eventually([&] { return !holder(sim).empty(); }, std::chrono::seconds(20)));
  std::string leader = holder(sim);
  std::string follower = leader == "alpha" ? "beta" : "alpha";
  std::this_thread::sleep_for(std::chrono::seconds(2));  // let it act for a while
  run("kill -9 " + pids[leader]);
  auto killed_at = std::chrono::steady_clock::now();
  REQUIRE(eventually([&] { return holder(sim) == follower; }, std::chrono::seconds(25)));
  auto took = std::chrono::steady_clock::now() - killed_at;
  INFO("takeover took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  CHECK(took <= std::chrono::seconds(20));
  // The follower acts after taking over.
  auto acts_of = [&](const std::string& id) {
    int n = 0;
    for (const auto& a : sim.audit())
      if (a.verb == "patch" && a.resource == "nodes" && a.user_agent.find("leader-demo/" + id) != std::string::npos) ++n;
    return n;
  };
  REQUIRE(eventually([&] { return acts_of(follower) >= 3; }, std::chrono::seconds(10)));
  run("kill -TERM " + pids[follower]);
  CHECK(eventually([&] { return run("kill -0 " + pids[follower]).status != 0; }, std::chrono::seconds(20)));
  // In the audit log every act of the old leader comes before every act of the new one.
  std::vector<std::string> actors;
  for (const auto& a : sim.audit())
    if (a.verb == "patch" && a.resource == "nodes" && a.code == 200)
      actors.push_back(a.user_agent.find("leader-demo/" + leader) != std::string::npos ? leader : follower);
  REQUIRE(!actors.empty());
  CHECK(actors.front() == leader);
  auto first_follower = std::find(actors.begin(), actors.end(), follower);
  CHECK(std::find(first_follower, actors.end(), leader) == actors.end());
  CHECK(std::count(actors.begin(), actors.end(), leader) >= 5);
  // A clean SIGTERM released the lease.
  CHECK(holder(sim).empty());
}
