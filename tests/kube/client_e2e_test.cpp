// The real client over HTTP and HTTPS against kubesim.

#include "core/strings.hpp"
#include "kube/client.hpp"
#include "simulator.hpp"
#include "support/asio_run.hpp"
#include "support/catch.hpp"
#include "support/process.hpp"

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>

#include <map>

using namespace spotshift;
using namespace spotshift::kube;
using spotshift::testing::run_sync;
using spotshift::testing::TempDir;

namespace {

std::string pods_scenario(int n) {
  std::string s = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"100\", memory: 100Gi, pods: \"500\"}}\n";
  for (int i = 0; i < n; ++i)
    s += fmt::format(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{:03}, labels: {{app: demo}}}}\nspec: {{nodeName: n1, containers: [{{name: c}}]}}\n",
        i);
  return s;
}

kubesim::SimulatorOptions tls_options(std::string scenario) {
  kubesim::SimulatorOptions o;
  o.scenario_text = std::move(scenario);
  o.tls = true;
  o.tokens = {{"good-token", "operator"}};
  o.cluster.workloads = false;
  return o;
}

ClientConfig config_for(const kubesim::Simulator& sim, std::string token = "good-token") {
  ClientConfig c;
  c.server = sim.url();
  REQUIRE(parse_server(c));
  c.ca_pem = sim.ca_pem();
  c.token = std::move(token);
  c.source = "test";
  return c;
}

std::shared_ptr<Client> client_for(boost::asio::io_context& ioc, const ClientConfig& c) {
  ClientOptions o;
  o.qps = 0;
  auto client = Client::create(ioc.get_executor(), c, o);
  REQUIRE(client);
  return *client;
}

std::string pod_body(const std::string& name) {
  return fmt::format(
      R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}","labels":{{"app":"demo"}}}},"spec":{{"containers":[{{"name":"c"}}]}}}})",
      name);
}

// The objects kubesim holds: key -> resourceVersion.
std::map<std::string, std::string> server_state(kubesim::Simulator& sim) {
  std::map<std::string, std::string> out;
  sim.run([&](kubesim::Cluster& c) {
    for (const auto& [k, o] : c.store().objects(*c.registry().pods())) out[k] = std::to_string(o->rv);
  });
  return out;
}

}  // namespace

TEST_CASE("over HTTPS with a token: paginated lists and a watch that survives drops and a forced 410", "[e2e]") {
  kubesim::Simulator sim(tls_options(pods_scenario(57)));
  REQUIRE(sim.start());
  boost::asio::io_context ioc;
  auto client = client_for(ioc, config_for(sim));

  sim.clear_audit();
  ListOptions paged;
  paged.limit = 10;
  auto first = run_sync(ioc, client->list<model::Pod>("", paged));
  REQUIRE(first);
  CHECK(first->items.size() == 57);
  int pages = 0;
  for (const auto& a : sim.audit()) pages += a.verb == "list" ? 1 : 0;
  CHECK(pages == 6);

  // A small list-then-watch loop, as a reflector runs it.
  std::map<std::string, std::string> cache;
  std::string rv;
  int relists = 0, rewatches = 0;
  auto relist = [&]() -> boost::asio::awaitable<Result<void>> {
    auto l = co_await client->list<model::Pod>("", paged);
    if (!l) co_return l.error();
    cache.clear();
    for (const auto& p : l->items) cache[p.key()] = p.meta.resource_version;
    rv = l->resource_version;
    ++relists;
    co_return Result<void>{};
  };
  // Reads events until the cache matches the server, re-watching after drops and relisting
  // after a 410.
  auto sync = [&]() -> boost::asio::awaitable<Result<void>> {
    for (int rounds = 0; rounds < 50; ++rounds) {
      if (cache == server_state(sim)) co_return Result<void>{};
      WatchOptions o;
      o.resource_version = rv;
      o.timeout_seconds = 30;
      auto w = co_await client->watch<model::Pod>("", o);
      if (!w) {
        if (w.error().is_expired()) {
          if (auto r = co_await relist(); !r) co_return r;
          continue;
        }
        co_return w.error();
      }
      ++rewatches;
      for (;;) {
        if (cache == server_state(sim)) co_return Result<void>{};
        auto e = co_await w->next();
        if (!e) {
          if (e.error().is_expired()) {
            if (auto r = co_await relist(); !r) co_return r;
          }
          break;  // dropped: watch again from the last resourceVersion
        }
        if (!*e) break;
        rv = (*e)->resource_version;
        if ((*e)->type == WatchEventType::kBookmark) continue;
        REQUIRE((*e)->object);
        if ((*e)->type == WatchEventType::kDeleted) cache.erase((*e)->object->key());
        else cache[(*e)->object->key()] = (*e)->object->meta.resource_version;
      }
    }
    co_return Error::internal("the cache never caught up");
  };

  REQUIRE(run_sync(ioc, relist()));
  for (int i = 0; i < 5; ++i) REQUIRE(run_sync(ioc, client->create(Resource::pods(), "default", pod_body(fmt::format("new-{}", i)))));
  REQUIRE(run_sync(ioc, sync()));

  sim.drop_watches();
  for (int i = 5; i < 8; ++i) REQUIRE(run_sync(ioc, client->create(Resource::pods(), "default", pod_body(fmt::format("new-{}", i)))));
  DeleteOptions now;
  now.grace_period_seconds = 0;
  REQUIRE(run_sync(ioc, client->remove(Resource::pods(), "default", "p000", now)));
  REQUIRE(run_sync(ioc, client->remove(Resource::pods(), "default", "new-1", now)));
  REQUIRE(run_sync(ioc, sync()));

  sim.faults().expire_next_watch("pods");
  sim.drop_watches();
  for (int i = 8; i < 11; ++i) REQUIRE(run_sync(ioc, client->create(Resource::pods(), "default", pod_body(fmt::format("new-{}", i)))));
  REQUIRE(run_sync(ioc, client->patch(Resource::pods(), "default", "p001", PatchType::kMerge, R"({"metadata":{"labels":{"x":"y"}}})")));
  REQUIRE(run_sync(ioc, sync()));

  CHECK(cache == server_state(sim));
  CHECK(cache.size() == 57 + 11 - 2);
  CHECK(relists >= 2);    // the first list and the one after the 410
  CHECK(rewatches >= 3);  // after the drop and after the 410
}

TEST_CASE("a wrong CA, a wrong server name and a bad token fail with clear errors", "[e2e][tls]") {
  kubesim::Simulator sim(tls_options(pods_scenario(1)));
  REQUIRE(sim.start());
  boost::asio::io_context ioc;

  auto other_ca = kube::CertificateAuthority::create("someone-else");
  REQUIRE(other_ca);
  ClientConfig wrong_ca = config_for(sim);
  wrong_ca.ca_pem = other_ca->cert_pem();
  auto r1 = run_sync(ioc, client_for(ioc, wrong_ca)->get<model::Node>("", "n1"));
  REQUIRE_FALSE(r1);
  CHECK(r1.error().kind == ErrorKind::kTls);
  CHECK_THAT(r1.error().message, Catch::Equals(fmt::format("GET /api/v1/nodes/n1: TLS handshake with 127.0.0.1:{} failed: "
                                                           "certificate verify failed: self-signed certificate in certificate chain",
                                                           sim.port())));

  ClientConfig wrong_name = config_for(sim);
  wrong_name.tls_server_name = "api.example.com";
  auto r2 = run_sync(ioc, client_for(ioc, wrong_name)->get<model::Node>("", "n1"));
  REQUIRE_FALSE(r2);
  CHECK_THAT(r2.error().message, Catch::Contains("the certificate is not valid for \"api.example.com\" (hostname mismatch)"));

  ClientConfig right_name = config_for(sim);
  right_name.tls_server_name = "localhost";  // a name the serving certificate has
  CHECK(run_sync(ioc, client_for(ioc, right_name)->get<model::Node>("", "n1")));

  auto r3 = run_sync(ioc, client_for(ioc, config_for(sim, "expired-token"))->get<model::Node>("", "n1"));
  REQUIRE_FALSE(r3);
  CHECK(r3.error().code == 401);
  CHECK(r3.error().to_string() == "Unauthorized (401): Unauthorized");

  ClientConfig insecure = config_for(sim);
  insecure.ca_pem = other_ca->cert_pem();
  insecure.insecure_skip_tls_verify = true;
  CHECK(run_sync(ioc, client_for(ioc, insecure)->get<model::Node>("", "n1")));
}

TEST_CASE("client certificates and exec plugins authenticate", "[e2e][tls]") {
  kubesim::Simulator sim(tls_options(pods_scenario(1)));
  REQUIRE(sim.start());
  REQUIRE(sim.ca());
  boost::asio::io_context ioc;

  // The certificate's organisations are the user's groups: system:masters may do anything, a
  // user of no group only what RBAC grants it (here nothing), as on a real API server.
  auto cert = sim.ca()->issue_client("cert-user", {"system:masters"});
  REQUIRE(cert);
  ClientConfig c = config_for(sim, "");
  c.client_certificate_pem = cert->cert_pem;
  c.client_key_pem = cert->key_pem;
  CHECK(run_sync(ioc, client_for(ioc, c)->get<model::Node>("", "n1")));
  auto plain = sim.ca()->issue_client("plain-user", {});
  REQUIRE(plain);
  ClientConfig p = config_for(sim, "");
  p.client_certificate_pem = plain->cert_pem;
  p.client_key_pem = plain->key_pem;
  auto forbidden = run_sync(ioc, client_for(ioc, p)->get<model::Node>("", "n1"));
  REQUIRE_FALSE(forbidden);
  CHECK(forbidden.error().message ==
        "nodes \"n1\" is forbidden: User \"plain-user\" cannot get resource \"nodes\" in API group \"\" at the cluster scope");

  auto expired = sim.ca()->issue_client("old-user", {}, std::chrono::hours(-1));
  REQUIRE(expired);
  ClientConfig e = config_for(sim, "");
  e.client_certificate_pem = expired->cert_pem;
  e.client_key_pem = expired->key_pem;
  auto refused = run_sync(ioc, client_for(ioc, e)->get<model::Node>("", "n1"));
  REQUIRE_FALSE(refused);  // the server rejects the handshake
  CHECK((refused.error().kind == ErrorKind::kTls || refused.error().kind == ErrorKind::kNetwork || refused.error().code == 401));

  TempDir dir;
  dir.write("plugin.sh",
            "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
            "\"status\":{\"token\":\"good-token\"}}'\n");
  spotshift::testing::run("chmod +x " + dir.file("plugin.sh"));
  ClientConfig x = config_for(sim, "");
  x.exec = ExecConfig{dir.file("plugin.sh"), {}, {}, "client.authentication.k8s.io/v1", "Never", true};
  CHECK(run_sync(ioc, client_for(ioc, x)->get<model::Node>("", "n1")));

  std::set<std::string> users;
  for (const auto& a : sim.audit()) users.insert(a.user);
  CHECK(users.count("cert-user"));
  CHECK(users.count("operator"));
}

TEST_CASE("plain HTTP to an IPv6 loopback address", "[e2e]") {
  kubesim::SimulatorOptions o;
  o.address = "::1";
  o.scenario_text = pods_scenario(3);
  kubesim::Simulator sim(o);
  auto started = sim.start();
  if (!started) {
    WARN("no IPv6 loopback on this machine: " << started.error().message);
    return;
  }
  boost::asio::io_context ioc;
  ClientConfig c;
  c.server = fmt::format("http://[::1]:{}", sim.port());
  REQUIRE(parse_server(c));
  auto pods = run_sync(ioc, client_for(ioc, c)->list<model::Pod>("default"));
  REQUIRE(pods);
  CHECK(pods->items.size() == 3);
}

TEST_CASE("writes, status subresources, preconditions and evictions against kubesim", "[e2e]") {
  kubesim::SimulatorOptions o;
  o.scenario_text = pods_scenario(2);
  kubesim::Simulator sim(o);
  REQUIRE(sim.start());
  boost::asio::io_context ioc;
  ClientConfig c;
  c.server = sim.url();
  REQUIRE(parse_server(c));
  auto client = client_for(ioc, c);

  auto node = run_sync(ioc, client->get<model::Node>("", "n1"));
  REQUIRE(node);
  auto stale = run_sync(ioc, client->patch(Resource::nodes(), "", "n1", PatchType::kMerge,
                                           R"({"metadata":{"resourceVersion":"1"},"spec":{"unschedulable":true}})"));
  REQUIRE_FALSE(stale);
  CHECK(stale.error().is_conflict());
  auto fresh = run_sync(
      ioc,
      client->patch(Resource::nodes(), "", "n1", PatchType::kMerge,
                    fmt::format(R"({{"metadata":{{"resourceVersion":"{}"}},"spec":{{"taints":[{{"key":"k","effect":"NoSchedule"}}]}}}})",
                                node->meta.resource_version)));
  REQUIRE(fresh);

  model::Lease lease;
  lease.meta.name = "leader";
  lease.meta.namespace_ = model::InternedString("default");
  lease.spec.holder_identity = "me";
  lease.spec.lease_duration_seconds = 15;
  auto created = run_sync(ioc, client->create(Resource::leases(), "default", model::encode_lease(lease)));
  REQUIRE(created);
  auto again = run_sync(ioc, client->create(Resource::leases(), "default", model::encode_lease(lease)));
  REQUIRE_FALSE(again);
  CHECK(again.error().is_already_exists());
  auto got = run_sync(ioc, client->get<model::Lease>("default", "leader"));
  REQUIRE(got);
  got->spec.holder_identity = "you";
  REQUIRE(run_sync(ioc, client->update(Resource::leases(), "default", "leader", model::encode_lease(*got))));
  auto conflict = run_sync(ioc, client->update(Resource::leases(), "default", "leader", model::encode_lease(*got)));
  REQUIRE_FALSE(conflict);  // the same resourceVersion again
  CHECK(conflict.error().is_conflict());

  auto status =
      run_sync(ioc, client->patch_status(Resource::pods(), "default", "p000", PatchType::kMerge, R"({"status":{"phase":"Failed"}})"));
  REQUIRE(status);
  DeleteOptions d;
  d.grace_period_seconds = 5;
  CHECK(run_sync(ioc, client->evict("default", "p001", d)));
  auto gone = run_sync(ioc, client->evict("default", "nope", d));
  REQUIRE_FALSE(gone);
  CHECK(gone.error().is_not_found());
}
