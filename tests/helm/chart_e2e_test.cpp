// The operator run the way the chart runs it: the rendered Deployment's args, and a service-account
// token that kubesim authorizes by the rendered ClusterRole, Role and bindings only.

#include "chart.hpp"

#include <set>
#include <tuple>

using namespace spotshift;
using namespace spotshift::chart;
using namespace spotshift::e2e;

namespace {

const std::string kUser = "system:serviceaccount:spotshift:spotshift";

EnvOptions tls_with_service_account() {
  return EnvOptions{.tls = true, .tokens = {{"admin-token", "admin"}, {"sa-token", kUser}}, .apply_crd = false};
}

// The chart as installed in namespace spotshift. The operator pods kubesim runs for the Deployment
// sit on ondemand-3 (never drainable in the demo), as the install guide suggests: on-demand nodes.
Rendered render_installed(TempDir& dir) {
  dir.write("values.yaml", "nodeSelector: {kubernetes.io/hostname: ondemand-3}\n");
  auto r = render(dir, "--name spotshift --namespace spotshift --include-crds -f " + dir.file("values.yaml"));
  INFO(r.error);
  REQUIRE(r.status == 0);
  return r;
}

std::vector<std::string> forbidden(Env& env) {
  std::vector<std::string> out;
  for (const auto& a : env.kubesim().audit())
    if (a.user == kUser && a.code == 403) out.push_back(fmt::format("{} {}", a.verb, a.resource));
  return out;
}

}  // namespace

TEST_CASE("the operator with only the chart's RBAC and the Deployment's args drains the demo cluster", "[chart-e2e]") {
  TempDir dir;
  auto r = render_installed(dir);
  Env env({}, tls_with_service_account());
  install(env, dir, "spotshift", r);
  env.apply("policy", policy_yaml("default", ""));
  BudgetWatch budget(env);

  // Two replicas, as the Deployment runs them: one leads, one waits.
  std::string args = operator_args(r, env.kubeconfig_for("sa-token"));
  auto a = std::make_unique<Operator>(args, dir.file("a.log"));
  auto b = std::make_unique<Operator>(args, dir.file("b.log"));
  INFO(a->log() << "\n---\n" << b->log());
  REQUIRE(eventually([&] { return env.status("default", {"nodesDrainedTotal"}) == "2"; }, 60s));
  CHECK(env.status("default", {"lastDrain", "node"}) == "ondemand-2");
  CHECK(env.status("default", {"lastDrain", "result"}) == "Succeeded");
  CHECK(budget.min_ready() >= 4);
  CHECK_FALSE(env.any_draining());
  CHECK_FALSE(env.events("DrainSucceeded").empty());

  // Everything went through the service account, and nothing was refused.
  size_t requests = 0;
  for (const auto& rec : env.kubesim().audit()) requests += rec.user == kUser ? 1 : 0;
  CHECK(requests > 20);
  CHECK(forbidden(env).empty());
  // The Lease in the release namespace, named after the release.
  std::string holder = env.kubectl("get lease -n spotshift spotshift -o jsonpath={.spec.holderIdentity}");
  CHECK_FALSE(holder.empty());

  a->stop(SIGTERM);
  b->stop(SIGTERM);
  CHECK(a->exit_status() == 0);
  CHECK(b->exit_status() == 0);
  // The chart asks for JSON logs.
  CHECK(a->log().find(R"("msg":"stopped","exitCode":0)") != std::string::npos);
  CHECK(b->log().find(R"("msg":"stopped","exitCode":0)") != std::string::npos);
}

TEST_CASE("taking away any one permission the chart grants gets a request of the operator refused", "[chart-e2e]") {
  TempDir dir;
  auto r = render_installed(dir);
  std::vector<Atom> atoms = atoms_of(operator_role(r, "ClusterRole"));
  auto lease_atoms = atoms_of(operator_role(r, "Role"));
  atoms.insert(atoms.end(), lease_atoms.begin(), lease_atoms.end());
  REQUIRE(atoms.size() == 31);
  // The policy takes its prices from a ConfigMap in the release namespace (the Role's get).
  const std::string pricing = "  pricing: {configMap: {namespace: spotshift, name: node-prices}}\n";

  std::vector<std::string> unused;
  for (const auto& atom : atoms) {
    INFO(atom.text());
    TempDir run_dir;
    std::string rest = r.documents([&](const std::string& k) { return !is_crd(k) && k != atom.role_kind; });
    rest += "---\n" + role_without(operator_role(r, atom.role_kind), atom) + "\n";
    Env env({}, tls_with_service_account());
    install(env, run_dir, "spotshift", r.documents(is_crd), rest);
    env.kubectl("create configmap node-prices -n spotshift --from-literal=m5.large=0.1");
    env.apply("policy", policy_yaml("default", pricing));
    Operator op(operator_args(r, env.kubeconfig_for("sa-token")), run_dir.file("operator.log"));
    if (atom.resource == "events" && atom.verb == "patch") {
      // A repeated event becomes a series with a patch: have a node's reason reported again by
      // tightening the budget that keeps ondemand-4 from draining.
      REQUIRE(eventually(
          [&] {
            for (const auto& e : env.events("NodeNotDrainable"))
              if (e.starts_with("Node/ondemand-4")) return true;
            return false;
          },
          30s));
      env.kubectl(R"(patch pdb web-pdb -n shop --type merge -p '{"spec":{"minAvailable":6}}')");
    }
    std::string want = fmt::format("{} {}", atom.verb, atom.resource);
    bool refused = eventually(
        [&] {
          auto f = forbidden(env);
          return std::find(f.begin(), f.end(), want) != f.end();
        },
        30s, 20ms);
    if (!refused) unused.push_back(atom.text() + "\n" + op.log());
  }
  INFO("permissions the operator never needed:\n" << fmt::format("{}", fmt::join(unused, "\n\n")));
  CHECK(unused.empty());
}

TEST_CASE("with steering, the operator with only the chart's RBAC makes its certificate, sets the caBundle and labels its pod",
          "[chart-e2e]") {
  TempDir dir;
  dir.write("values.yaml", "nodeSelector: {kubernetes.io/hostname: ondemand-3}\nsteering: {enabled: true}\n");
  auto r = render(dir, "--name spotshift --namespace spotshift --include-crds -f " + dir.file("values.yaml"));
  INFO(r.error);
  REQUIRE(r.status == 0);
  Env env({}, tls_with_service_account());
  install(env, dir, "spotshift", r);
  // The pod the leader labels: one of the Deployment's, as $(POD_NAMESPACE)/$(POD_NAME) names it.
  std::string pod;
  REQUIRE(
      eventually([&] { return !(pod = env.kubectl("get pods -n spotshift -o jsonpath={.items[0].metadata.name}", false)).empty(); }, 20s));
  std::string args = operator_args(r, env.kubeconfig_for("sa-token"));
  for (auto [from, to] : {std::pair<std::string, std::string>{"$(POD_NAMESPACE)/$(POD_NAME)", "spotshift/" + pod},
                          {"--webhook-bind-address=:9443", "--webhook-bind-address=127.0.0.1:0"}}) {
    INFO(args);
    REQUIRE(args.find(from) != std::string::npos);
    args.replace(args.find(from), from.size(), to);
  }
  Operator op(args, dir.file("operator.log"));
  INFO(op.log());
  REQUIRE(eventually(
      [&] {
        return !env.kubectl("get mutatingwebhookconfiguration spotshift -o jsonpath={.webhooks[0].clientConfig.caBundle}", false).empty();
      },
      30s, 100ms));
  CHECK(env.kubectl("get secret -n spotshift spotshift-webhook-tls -o jsonpath={.type}") == "kubernetes.io/tls");
  REQUIRE(eventually(
      [&] {
        return env.kubectl(fmt::format("get pod -n spotshift {} -o 'jsonpath={{.metadata.labels.spotshift\\.io/webhook-leader}}'", pod),
                           false) == "true";
      },
      20s, 100ms));
  CHECK(forbidden(env).empty());
}
