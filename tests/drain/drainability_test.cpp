// The drainability chain, rule by rule, and the PodDisruptionBudget charge.

#include "drain/drainability.hpp"
#include "drain/budget.hpp"
#include "helpers.hpp"
#include "model/workload.hpp"
#include "support/catch.hpp"

#include <fmt/format.h>

#include <map>

using namespace spotshift;
using namespace spotshift::drain;
using namespace spotshift::drain::testing;

namespace {

struct Case {
  std::string name;
  PodPtr pod;
  std::string spec_json;  // "{}" for the defaults
  Verdict verdict;
  std::string rule;
  std::string reason_part;
};

void run(const std::vector<Case>& cases) {
  // One spot node with a dedicated taint nobody tolerates but "gpu" pods, labelled pool=spot.
  SpotReach reach(
      {spot("spot-1").label("pool", "spot").taint("dedicated", "gpu", "NoSchedule").build(), spot("spot-2").label("pool", "spot")});
  auto pdbs = std::vector<PdbPtr>{make_pdb("dns-pdb", "kube-system", "dns", 1)};
  BudgetIndex budgets(pdbs);
  model::Labels team_a;
  team_a.set("team", "a");
  for (const auto& c : cases) {
    SECTION(c.name) {
      PolicySpec spec = spec_from(c.spec_json).value();
      DrainContext ctx{spec, [&](std::string_view ns) -> const model::Labels* { return ns == "team-a" ? &team_a : nullptr; },
                       [&](const model::Pod& p) { return budgets.covers(p); }, &reach, nullptr};
      PodVerdict v = classify(*c.pod, ctx);
      INFO("reason: " << v.reason);
      CHECK(v.verdict == c.verdict);
      CHECK(v.rule == c.rule);
      CHECK(v.reason.find(c.reason_part) != std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE("pods that stay where they are are skipped", "[drainability]") {
  run({
      {"a terminating pod is skipped", replica("w").terminating(), "{}", Verdict::kSkip, "terminal", "terminating"},
      {"a Succeeded pod is skipped", replica("w").phase("Succeeded"), "{}", Verdict::kSkip, "terminal", "Succeeded"},
      {"a Failed pod is skipped", replica("w").phase("Failed"), "{}", Verdict::kSkip, "terminal", "Failed"},
      {"a DaemonSet pod is skipped", make_pod("agent").owner("DaemonSet", "node-agent"), "{}", Verdict::kSkip, "daemonset",
       "DaemonSet node-agent"},
      {"a mirror pod is skipped", make_pod("etcd").annotation("kubernetes.io/config.mirror", "abc").owner("Node", "n1"), "{}",
       Verdict::kSkip, "mirror", "static"},
      {"a terminating DaemonSet pod is skipped as terminating (the first rule wins)",
       make_pod("agent").owner("DaemonSet", "node-agent").terminating(), "{}", Verdict::kSkip, "terminal", "terminating"},
  });
}

TEST_CASE("annotations block a pod", "[drainability]") {
  run({
      {"spotshift.io/do-not-move blocks", replica("w").annotation("spotshift.io/do-not-move", "true"), "{}", Verdict::kBlock, "annotation",
       "spotshift.io/do-not-move"},
      {"karpenter.sh/do-not-disrupt blocks", replica("w").annotation("karpenter.sh/do-not-disrupt", "true"), "{}", Verdict::kBlock,
       "annotation", "karpenter.sh/do-not-disrupt"},
      {"safe-to-evict=false blocks", replica("w").annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "false"), "{}",
       Verdict::kBlock, "annotation", "safe-to-evict=false"},
      {"do-not-move=false does not block", replica("w").annotation("spotshift.io/do-not-move", "false"), "{}", Verdict::kMove, "default",
       ""},
      {"safe-to-evict=true does not lift do-not-move",
       replica("w").annotation("spotshift.io/do-not-move", "true").annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "true"),
       "{}", Verdict::kBlock, "annotation", "do-not-move"},
  });
}

TEST_CASE("the policy's pod and namespace selectors protect the pods they leave out", "[drainability]") {
  run({
      {"a pod outside podSelector blocks", replica("w", "db"), R"({"podSelector":{"matchLabels":{"app":"web"}}})", Verdict::kBlock,
       "selection", "podSelector"},
      {"a pod inside podSelector moves", replica("w", "web"), R"({"podSelector":{"matchLabels":{"app":"web"}}})", Verdict::kMove, "default",
       ""},
      {"a namespace outside namespaceSelector blocks", replica("w").ns("team-a"), R"({"namespaceSelector":{"matchLabels":{"team":"b"}}})",
       Verdict::kBlock, "selection", "namespaceSelector"},
      {"a namespace inside namespaceSelector moves", replica("w").ns("team-a"), R"({"namespaceSelector":{"matchLabels":{"team":"a"}}})",
       Verdict::kMove, "default", ""},
      {"an unknown namespace blocks under a namespaceSelector", replica("w").ns("elsewhere"),
       R"({"namespaceSelector":{"matchLabels":{"team":"a"}}})", Verdict::kBlock, "selection", "not known"},
      {"safe-to-evict=true does not lift the podSelector",
       replica("w", "db").annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "true"),
       R"({"podSelector":{"matchLabels":{"app":"web"}}})", Verdict::kBlock, "selection", "podSelector"},
  });
}

TEST_CASE("bare pods block unless the policy deletes non-replicated pods", "[drainability]") {
  run({
      {"a pod without a controller blocks by default", make_pod("bare"), "{}", Verdict::kBlock, "controller", "has no controller"},
      {"deleteNonReplicatedPods moves it with a warning", make_pod("bare"), R"({"deleteNonReplicatedPods":true})", Verdict::kMove,
       "controller", "deleteNonReplicatedPods is true"},
      {"a bare pod the policy lets go still obeys later rules", make_pod("bare").host_path(), R"({"deleteNonReplicatedPods":true})",
       Verdict::kBlock, "local-storage", "hostPath"},
      {"safe-to-evict=true lifts the bare-pod rule", make_pod("bare").annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "true"),
       "{}", Verdict::kMove, "default", ""},
  });
}

TEST_CASE("local storage: emptyDir moves and hostPath blocks by default, both configurable", "[drainability]") {
  run({
      {"an emptyDir pod moves by default", replica("w").empty_dir(), "{}", Verdict::kMove, "default", ""},
      {"an emptyDir pod blocks when the policy says so", replica("w").empty_dir(), R"({"localStorage":{"emptyDir":"Block"}})",
       Verdict::kBlock, "local-storage", "emptyDir"},
      {"a hostPath pod blocks by default", replica("w").host_path(), "{}", Verdict::kBlock, "local-storage", "hostPath"},
      {"a hostPath pod moves when the policy says so", replica("w").host_path(), R"({"localStorage":{"hostPath":"Move"}})", Verdict::kMove,
       "default", ""},
      {"safe-to-evict=true lifts the hostPath rule",
       replica("w").host_path().annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "true"), "{}", Verdict::kMove, "default", ""},
  });
}

TEST_CASE("kube-system pods need a PodDisruptionBudget", "[drainability]") {
  run({
      {"a kube-system pod without a budget blocks", replica("metrics", "metrics").ns("kube-system"), "{}", Verdict::kBlock, "kube-system",
       "no PodDisruptionBudget"},
      {"a kube-system pod under a budget moves", replica("dns", "dns").ns("kube-system"), "{}", Verdict::kMove, "default", ""},
      {"kubeSystemPodsWithoutPDB: Move moves it", replica("metrics", "metrics").ns("kube-system"), R"({"kubeSystemPodsWithoutPDB":"Move"})",
       Verdict::kMove, "default", ""},
      {"safe-to-evict=true lifts the kube-system rule",
       replica("metrics", "metrics").ns("kube-system").annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "true"), "{}",
       Verdict::kMove, "default", ""},
  });
}

TEST_CASE("pods pinned to on-demand nodes block", "[drainability]") {
  run({
      {"a nodeSelector no spot node has blocks", replica("billing").selector("karpenter.sh/capacity-type", "on-demand"), "{}",
       Verdict::kBlock, "pinned", "pinned to on-demand"},
      {"a nodeSelector a spot node has moves", replica("w").selector("pool", "spot"), "{}", Verdict::kMove, "default", ""},
      {"required node affinity ruling out every spot node blocks",
       replica("w").affinity(
           R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"NotIn","values":["spot"]}]}]}}})"),
       "{}", Verdict::kBlock, "pinned", "pinned to on-demand"},
      {"a pod that needs the tainted spot node but lacks its toleration, with the other ruled out, blocks",
       replica("w").selector("kubernetes.io/hostname", "spot-1"), "{}", Verdict::kBlock, "pinned", "tolerations"},
      {"the matching toleration makes the tainted spot node reachable",
       replica("w").selector("kubernetes.io/hostname", "spot-1").toleration(R"({"key":"dedicated","value":"gpu","effect":"NoSchedule"})"),
       "{}", Verdict::kMove, "default", ""},
      {"safe-to-evict=true does not lift the pinned rule",
       replica("billing")
           .selector("karpenter.sh/capacity-type", "on-demand")
           .annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "true"),
       "{}", Verdict::kBlock, "pinned", "pinned"},
  });
}

TEST_CASE("budgets are charged for all of a node's pods together", "[budget]") {
  auto pdbs = std::vector<PdbPtr>{make_pdb("web-pdb", "default", "web", 1), make_pdb("api-pdb", "default", "api", 2),
                                  make_pdb("api-extra", "default", "api2", 5)};
  BudgetIndex index(pdbs);
  auto w1 = replica("w1", "web").build(), w2 = replica("w2", "web").build(), a1 = replica("a1", "api").build(),
       free = replica("f", "other").build();

  SECTION("one pod within the budget passes") {
    auto c = check_budgets({w1.get(), a1.get(), free.get()}, index);
    CHECK(c.ok);
    REQUIRE(c.budgets_of.size() == 3);
    REQUIRE(c.budgets_of[0].size() == 1);
    CHECK(c.budgets_of[0][0]->meta.key() == "default/web-pdb");
    REQUIRE(c.budgets_of[1].size() == 1);
    CHECK(c.budgets_of[1][0]->meta.key() == "default/api-pdb");
    CHECK(c.budgets_of[2].empty());
  }
  SECTION("two pods against a budget allowing one fail, naming the budget") {
    auto c = check_budgets({w1.get(), w2.get()}, index);
    CHECK_FALSE(c.ok);
    REQUIRE(c.reasons.size() == 1);
    CHECK(c.reasons[0] == "PodDisruptionBudget default/web-pdb allows 1 disruption now, and draining this node needs 2 (w1, w2)");
  }
  SECTION("an unready pod is free when the budget is healthy enough") {
    auto unready = replica("w3", "web").unready().build();
    CHECK(check_budgets({w1.get(), unready.get()}, index).ok);
  }
  SECTION("a budget the disruption controller has not processed refuses") {
    auto stale = std::vector<PdbPtr>{make_pdb("web-pdb", "default", "web", 3, /*generation=*/2, /*observed=*/1)};
    BudgetIndex stale_index(stale);
    auto c = check_budgets({w1.get()}, stale_index);
    CHECK_FALSE(c.ok);
    CHECK(c.reasons.at(0).find("still being processed") != std::string::npos);
  }
  SECTION("a pod under two budgets cannot be evicted at all") {
    auto both = replica("x", "web").label("app", "web").build();
    auto two = std::vector<PdbPtr>{make_pdb("a", "default", "web", 5), make_pdb("b", "default", "web", 5)};
    BudgetIndex two_index(two);
    auto c = check_budgets({both.get()}, two_index);
    CHECK_FALSE(c.ok);
    CHECK(c.reasons.at(0) ==
          "pod default/x is covered by more than one PodDisruptionBudget (default/a, default/b), which the Eviction API refuses");
  }
  SECTION("budgets in other namespaces do not apply") {
    auto other = replica("w9", "web").ns("other").build();
    auto c = check_budgets({other.get()}, index);
    CHECK(c.ok);
    REQUIRE(c.budgets_of.size() == 1);
    CHECK(c.budgets_of[0].empty());
  }
}

TEST_CASE("the budget index finds what checking every budget finds, in input order", "[budget]") {
  auto pdb = [](std::string name, std::string ns, std::string selector) {
    std::string json = fmt::format(R"({{"metadata":{{"name":"{}","namespace":"{}"}},"spec":{{"minAvailable":1{}}}}})", name, ns,
                                   selector.empty() ? "" : ",\"selector\":" + selector);
    return std::make_shared<const model::PodDisruptionBudget>(model::decode_pdb(std::string_view(json)).value());
  };
  std::vector<PdbPtr> pdbs = {
      pdb("in-two", "default", R"({"matchExpressions":[{"key":"app","operator":"In","values":["web","api"]}]})"),
      pdb("web", "default", R"({"matchLabels":{"app":"web"}})"),
      pdb("web-fe", "default", R"({"matchLabels":{"app":"web","tier":"fe"}})"),
      pdb("not-db", "default", R"({"matchExpressions":[{"key":"app","operator":"NotIn","values":["db"]}]})"),
      pdb("has-tier", "default", R"({"matchExpressions":[{"key":"tier","operator":"Exists"}]})"),
      pdb("empty", "default", "{}"),
      pdb("absent", "default", ""),
      pdb("web-other", "other", R"({"matchLabels":{"app":"web"}})"),
      pdb("tier-in", "default", R"({"matchExpressions":[{"key":"tier","operator":"In","values":["fe"]}],"matchLabels":{"app":"api"}})"),
  };
  BudgetIndex index(pdbs);
  std::vector<PodPtr> pods = {replica("a", "web"),
                              replica("b", "web").label("tier", "fe"),
                              replica("c", "api").label("tier", "fe"),
                              replica("d", "db"),
                              replica("e", "web").ns("other"),
                              replica("f", "api"),
                              replica("g", "none").ns("nowhere")};
  for (const auto& pod : pods) {
    INFO(pod->key());
    std::vector<std::string> every, indexed;
    for (const auto& p : pdbs)
      if (p->matches(*pod)) every.push_back(p->meta.name);
    for (const auto* p : index.matching(*pod)) indexed.push_back(p->meta.name);
    CHECK(indexed == every);
  }
  std::vector<std::string> b;
  for (const auto* p : index.matching(*pods[1])) b.push_back(p->meta.name);
  // policy/v1: "empty" ({}) covers every pod of its namespace, "absent" (null) none.
  CHECK(b == std::vector<std::string>{"in-two", "web", "web-fe", "not-db", "has-tier", "empty"});
  REQUIRE(index.matching(*pods[3]).size() == 1);
  CHECK(index.matching(*pods[3])[0]->meta.name == "empty");
  CHECK(index.matching(*pods[4]).size() == 1);  // e in "other": web-other only
}

TEST_CASE("a budget whose selector is {} covers every pod of its namespace, and beside another budget makes two", "[budget]") {
  auto pdb = [](std::string name, std::string selector) {
    std::string json = fmt::format(
        R"({{"metadata":{{"name":"{}","namespace":"default","generation":1}},"spec":{{"minAvailable":1{}}},)"
        R"("status":{{"observedGeneration":1,"disruptionsAllowed":5,"currentHealthy":6,"desiredHealthy":1,"expectedPods":6}}}})",
        name, selector.empty() ? "" : ",\"selector\":" + selector);
    return std::make_shared<const model::PodDisruptionBudget>(model::decode_pdb(std::string_view(json)).value());
  };
  auto w = replica("w1", "web").build();
  auto db = replica("db-0", "db").build();
  SECTION("alone, it charges every pod of the namespace") {
    std::vector<PdbPtr> all = {pdb("everything", "{}")};
    BudgetIndex index(all);
    auto c = check_budgets({w.get(), db.get()}, index);
    CHECK(c.ok);
    REQUIRE(c.budgets_of.size() == 2);
    CHECK(c.budgets_of[0].size() == 1);
    CHECK(c.budgets_of[1].size() == 1);
  }
  SECTION("beside a specific budget, a pod both select cannot be evicted") {
    std::vector<PdbPtr> two = {pdb("everything", "{}"), pdb("web", R"({"matchLabels":{"app":"web"}})")};
    BudgetIndex index(two);
    auto c = check_budgets({w.get()}, index);
    CHECK_FALSE(c.ok);
    CHECK(
        c.reasons.at(0) ==
        "pod default/w1 is covered by more than one PodDisruptionBudget (default/everything, default/web), which the Eviction API refuses");
  }
  SECTION("a null selector covers nothing") {
    std::vector<PdbPtr> none = {pdb("nothing", "")};
    BudgetIndex index(none);
    CHECK(index.matching(*w).empty());
  }
}

TEST_CASE("a pod whose controller is gone blocks, and a Job's pod unless its podFailurePolicy ignores disruptions", "[drainability]") {
  // The caches: "Kind namespace/name" -> the controller.
  std::map<std::string, std::shared_ptr<const model::WorkloadController>> cache;
  auto add = [&](const std::string& kind, const std::string& name, const std::string& uid, bool ignores) {
    auto c = std::make_shared<model::WorkloadController>();
    c->kind = kind;
    c->meta.name = name;
    c->meta.namespace_ = model::InternedString("default");
    c->meta.uid = uid;
    c->ignores_disruptions = ignores;
    cache[kind + " default/" + name] = c;
  };
  add("ReplicaSet", "web-rs", "uid-web-rs", false);
  add("Job", "nightly", "uid-nightly", false);
  add("Job", "tolerant", "uid-tolerant", true);
  add("StatefulSet", "db", "uid-db-recreated", false);  // a new StatefulSet of the same name
  OwnerLookup lookup = [&](const model::Pod& pod) {
    return owner_info(
        pod,
        [&](std::string_view kind, const std::string& key) -> std::shared_ptr<const model::WorkloadController> {
          auto it = cache.find(fmt::format("{} {}", kind, key));
          return it == cache.end() ? nullptr : it->second;
        },
        model::watched_controller_kind);
  };
  auto classify_with = [&](const PodPtr& pod, const std::string& spec_json, bool watched = true) {
    PolicySpec spec = spec_from(spec_json).value();
    DrainContext ctx{spec, nullptr, nullptr, nullptr, watched ? lookup : nullptr};
    PodVerdict v = classify(*pod, ctx);
    INFO("reason: " << v.reason);
    return v;
  };

  CHECK(classify_with(replica("web"), "{}").verdict == Verdict::kMove);
  PodVerdict gone = classify_with(make_pod("x").owner("ReplicaSet", "gone-rs"), "{}");
  CHECK(gone.verdict == Verdict::kBlock);
  CHECK(gone.rule == "owner");
  CHECK(gone.reason ==
        "its controller ReplicaSet gone-rs no longer exists, so nothing would recreate it (deleteNonReplicatedPods is false)");
  // The name is there again, but it is another object: not this pod's controller.
  CHECK(classify_with(make_pod("db-0").owner("StatefulSet", "db"), "{}").reason.find("StatefulSet db no longer exists") !=
        std::string::npos);
  PodVerdict let_go = classify_with(make_pod("x").owner("ReplicaSet", "gone-rs"), R"({"deleteNonReplicatedPods":true})");
  CHECK(let_go.verdict == Verdict::kMove);
  CHECK(let_go.warning);
  CHECK(let_go.reason.find("moved because deleteNonReplicatedPods is true") != std::string::npos);
  // Kinds nobody watches (a custom controller's) are taken to exist.
  CHECK(classify_with(make_pod("c").owner("CloneSet", "c"), "{}").verdict == Verdict::kMove);

  PodVerdict job = classify_with(make_pod("nightly-abc").owner("Job", "nightly"), "{}");
  CHECK(job.verdict == Verdict::kBlock);
  CHECK(job.rule == "owner");
  CHECK(job.reason ==
        "owned by Job nightly, whose podFailurePolicy does not ignore disruptions (DisruptionTarget): an eviction would count "
        "against its backoffLimit (evictJobPods is false)");
  CHECK(classify_with(make_pod("tolerant-abc").owner("Job", "tolerant"), "{}").verdict == Verdict::kMove);
  CHECK(classify_with(make_pod("nightly-abc").owner("Job", "nightly"), R"({"evictJobPods":true})").verdict == Verdict::kMove);
  CHECK(classify_with(make_pod("nightly-abc").owner("Job", "nightly").annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "true"),
                      "{}")
            .verdict == Verdict::kMove);
  // A Job that is gone is a missing controller; with no caches of controllers, a Job is not known.
  CHECK(classify_with(make_pod("old-abc").owner("Job", "old"), "{}").reason.find("Job old no longer exists") != std::string::npos);
  PodVerdict unknown = classify_with(make_pod("nightly-abc").owner("Job", "nightly"), "{}", false);
  CHECK(unknown.verdict == Verdict::kBlock);
  CHECK(unknown.reason.find("owned by Job nightly, which is not known here") != std::string::npos);
  CHECK(classify_with(make_pod("x").owner("ReplicaSet", "gone-rs"), "{}", false).verdict == Verdict::kMove);
}
