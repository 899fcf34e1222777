// kubesim over real HTTP: driven by kubectl and curl, the clients whose behaviour it must match.

#include "simulator.hpp"
#include "support/catch.hpp"
#include "support/process.hpp"

#include "core/strings.hpp"
#include "json_util.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <thread>

using namespace spotshift;
using namespace spotshift::kubesim;
using spotshift::testing::eventually;
using spotshift::testing::require_tool;
using spotshift::testing::run;
using spotshift::testing::shell_quote;
using spotshift::testing::TempDir;

namespace {

const std::string kScenarios = KUBESIM_SCENARIOS;

struct Harness {
  TempDir dir;
  std::unique_ptr<Simulator> sim;
  std::string kubectl;

  explicit Harness(SimulatorOptions o) {
    require_tool("kubectl");
    require_tool("curl");
    sim = std::make_unique<Simulator>(std::move(o));
    auto r = sim->start();
    if (!r) FAIL("kubesim did not start: " << r.error().message);
    REQUIRE(sim->write_kubeconfig(dir.file("kubeconfig")));
    kubectl = fmt::format("kubectl --kubeconfig {} --cache-dir {} --request-timeout=20s", dir.file("kubeconfig"), dir.file("cache"));
  }
  spotshift::testing::CommandResult k(const std::string& args) { return run(kubectl + " " + args); }
  std::string curl_flags() const {
    std::string f = "-s --max-time 20";
    if (sim->url().starts_with("https")) {
      std::ofstream(dir.file("ca.crt")) << sim->ca_pem();
      f += " --cacert " + dir.file("ca.crt");
    }
    return f;
  }
  spotshift::testing::CommandResult curl(const std::string& args) { return run("curl " + curl_flags() + " " + args); }
};

SimulatorOptions demo(double scale = 20) {
  SimulatorOptions o;
  o.scenario_path = kScenarios + "/demo.yaml";
  o.time_scale = scale;
  return o;
}

constexpr const char* kCrd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Cluster
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Mode, type: string, jsonPath: .spec.mode}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        description: A widget of some size.
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1, description: How many parts the widget has.}
              mode: {type: string, enum: [fast, slow], default: slow}
)";

}  // namespace

TEST_CASE("kubectl gets nodes, applies a CRD and a custom resource, and shows its printer columns", "[http][kubectl]") {
  Harness h(demo());
  auto nodes = h.k("get nodes");
  REQUIRE(nodes.status == 0);
  CHECK(nodes.output.find("NAME         STATUS   ROLES         AGE") == 0);
  CHECK(nodes.output.find("spot-1       Ready    spot-worker") != std::string::npos);
  // -o wide: the kubelet's addresses and system info (registered nodes get an InternalIP each).
  auto wide = h.k("get nodes -o wide");
  CHECK(wide.output.find("VERSION   INTERNAL-IP   EXTERNAL-IP   OS-IMAGE                 KERNEL-VERSION     CONTAINER-RUNTIME\n") !=
        std::string::npos);
  CHECK(wide.output.find("spot-1       Ready    spot-worker   ") != std::string::npos);
  CHECK(h.k("get node spot-1 -o 'jsonpath={.status.addresses[?(@.type==\"Hostname\")].address}'").output == "spot-1");
  CHECK(h.k("get pods -n shop -o wide").output.find("   NODE         NOMINATED NODE   READINESS GATES\n") != std::string::npos);

  // kubectl create sends built-in objects as protobuf.
  auto ns = h.k("create namespace team-a");
  INFO(ns.output);
  CHECK(ns.status == 0);
  CHECK(h.k("get namespace team-a -o jsonpath={.metadata.name}/{.status.phase}").output == "team-a/Active");
  // ConfigMaps and Secrets, also created as protobuf; a Secret's data is base64 and its type
  // defaults to Opaque, as the API server stores them.
  auto cm = h.k("create configmap settings -n team-a --from-literal=a=b --from-literal=mode=fast");
  INFO(cm.output);
  CHECK(cm.status == 0);
  CHECK(h.k("get configmap settings -n team-a -o jsonpath={.data.a}/{.data.mode}").output == "b/fast");
  auto secret = h.k("create secret generic token -n team-a --from-literal=password=s3cr3t");
  INFO(secret.output);
  CHECK(secret.status == 0);
  CHECK(h.k("get secret token -n team-a -o jsonpath={.type}/{.data.password}").output == "Opaque/czNjcjN0");
  h.dir.write("secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: applied, namespace: team-a}\nstringData: {user: admin}\n");
  REQUIRE(h.k("apply -f " + h.dir.file("secret.yaml")).status == 0);
  CHECK(h.k("get secret applied -n team-a -o jsonpath={.data.user}").output == "YWRtaW4=");
  CHECK(h.k("get secret applied -n team-a -o jsonpath={.stringData}").output.empty());
  // Every namespace publishes the cluster's CA, as kube-controller-manager does.
  CHECK(h.k("get cm -n team-a -o name").output == "configmap/kube-root-ca.crt\nconfigmap/settings\n");
  // A kubelet's identifiers, which strict clients require, and a container's image digest.
  CHECK(h.k("get node spot-1 -o jsonpath={.status.nodeInfo.machineID}/{.status.nodeInfo.systemUUID}/{.status.nodeInfo.bootID}").output ==
        "machine-spot-1/uuid-spot-1/boot-spot-1");

  h.dir.write("crd.yaml", kCrd);
  auto crd = h.k("apply -f " + h.dir.file("crd.yaml"));
  INFO(crd.output);
  REQUIRE(crd.status == 0);
  CHECK(crd.output.find("customresourcedefinition.apiextensions.k8s.io/widgets.example.com created") != std::string::npos);
  REQUIRE(h.k("wait --for=condition=Established crd/widgets.example.com --timeout=20s").status == 0);
  h.dir.write("w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n");
  auto cr = h.k("apply -f " + h.dir.file("w.yaml"));
  INFO(cr.output);
  REQUIRE(cr.status == 0);
  auto get = h.k("get widgets");
  INFO(get.output);
  CHECK(get.output.find("NAME   SIZE   MODE   AGE") == 0);
  CHECK(get.output.find("w1     3      slow") != std::string::npos);
  // kubectl explain reads the CRD's schema from /openapi/v3.
  auto explain = h.k("explain widget.spec.size");
  INFO(explain.output);
  CHECK(explain.status == 0);
  CHECK(explain.output.find("FIELD: size <integer>") != std::string::npos);
  CHECK(explain.output.find("How many parts the widget has.") != std::string::npos);
  auto top = h.k("explain widgets");
  CHECK(top.output.find("A widget of some size.") != std::string::npos);
  CHECK(top.output.find("APIVersion defines the versioned schema") != std::string::npos);
  // Re-applying changes it through kubectl's merge patch; an invalid value is refused with causes.
  h.dir.write("w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 5, mode: fast}\n");
  REQUIRE(h.k("apply -f " + h.dir.file("w.yaml")).status == 0);
  CHECK(h.k("get wd w1 -o jsonpath={.spec.size}").output == "5");
  h.dir.write("bad.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2}\nspec: {size: 0, mode: medium}\n");
  auto bad = h.k("apply -f " + h.dir.file("bad.yaml"));
  CHECK(bad.status != 0);
  CHECK(bad.output.find("The Widget \"w2\" is invalid") != std::string::npos);
  CHECK(bad.output.find("spec.mode: Unsupported value: \"medium\"") != std::string::npos);
  h.dir.write("unknown.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w3}\nspec: {size: 1, colour: red}\n");
  auto unknown = h.k("apply -f " + h.dir.file("unknown.yaml"));
  CHECK(unknown.status != 0);
  CHECK(unknown.output.find("strict decoding error: unknown field \"spec.colour\"") != std::string::npos);
  REQUIRE(h.k("delete widget w1").status == 0);
}

TEST_CASE("kubectl create sends built-in objects as protobuf, and kubesim stores what they say", "[http][kubectl]") {
  Harness h(demo());
  auto run = [&](const std::string& args) {
    auto r = h.k(args);
    INFO(args << ": " << r.output);
    CHECK(r.status == 0);
  };
  auto get = [&](const std::string& what, const std::string& path) { return h.k("get " + what + " -o jsonpath=" + path).output; };
  run("create namespace team-b");
  // A Deployment with a command and a port; replicas 0 is a value, not an absent field. The
  // Deployment controller creates the other one's pods.
  run("create deployment idle -n team-b --image nginx:1.27 --replicas 0 --port 8080 -- sleep 10");
  CHECK(get("deploy idle -n team-b", "'{.spec.replicas}/{.spec.selector.matchLabels.app}/{.spec.template.metadata.labels.app}'") ==
        "0/idle/idle");
  CHECK(get("deploy idle -n team-b",
            "'{.spec.template.spec.containers[0].name}/{.spec.template.spec.containers[0].image}/"
            "{.spec.template.spec.containers[0].command}/{.spec.template.spec.containers[0].ports[0].containerPort}'") ==
        "nginx/nginx:1.27/[\"sleep\",\"10\"]/8080");
  run("create deployment shop -n team-b --image nginx --image busybox:1");
  CHECK(get("deploy shop -n team-b", "'{.spec.replicas}/{.spec.strategy.type}/{.spec.template.spec.containers[*].image}'") ==
        "1/RollingUpdate/nginx busybox:1");
  auto ready = h.k("rollout status deploy/shop -n team-b --timeout=20s");
  INFO(ready.output);
  CHECK(ready.status == 0);
  // The deployment controller's conditions, which scripts wait on.
  auto available = h.k("wait --for=condition=Available deploy/shop -n team-b --timeout=20s");
  INFO(available.output);
  CHECK(available.status == 0);
  auto progressing = [&] { return get("deploy shop -n team-b", "'{.status.conditions[?(@.type==\"Progressing\")].reason}'"); };
  CHECK(progressing() == "NewReplicaSetAvailable");
  run("rollout pause deploy/shop -n team-b");
  CHECK(progressing() == "DeploymentPaused");
  run("rollout resume deploy/shop -n team-b");
  CHECK(progressing() == "NewReplicaSetAvailable");
  // Budgets: minAvailable 0 is kept; a percentage and a set-based selector.
  run("create pdb none -n team-b --selector app=shop --min-available 0");
  CHECK(get("pdb none -n team-b", "'{.spec.minAvailable}/{.spec.selector.matchLabels.app}'") == "0/shop");
  run("create pdb quarter -n team-b --selector 'app=shop,tier in (a,b)' --max-unavailable 25%");
  CHECK(get("pdb quarter -n team-b",
            "'{.spec.maxUnavailable}/{.spec.selector.matchExpressions[0].operator}/"
            "{.spec.selector.matchExpressions[0].values}'") == "25%/In/[\"a\",\"b\"]");
  run("create job once -n team-b --image busybox -- echo hi");
  CHECK(get("job once -n team-b", "'{.spec.template.spec.containers[0].command}'") == "[\"echo\",\"hi\"]");
  run("create service nodeport front -n team-b --tcp 80:8080 --tcp 443:https --node-port 30080");
  CHECK(get("svc front -n team-b", "'{.spec.type}/{.spec.ports[0].targetPort}/{.spec.ports[1].targetPort}/{.spec.ports[0].nodePort}'") ==
        "NodePort/8080/https/30080");
  run("create serviceaccount robot -n team-b");
  run("create role reader -n team-b --verb get,list --resource pods,deployments.apps --resource-name x");
  CHECK(get("role reader -n team-b", "'{.rules[0].verbs}/{.rules[*].apiGroups}/{.rules[0].resourceNames}'") ==
        "[\"get\",\"list\"]/[\"\"] [\"apps\"]/[\"x\"]");
  run("create rolebinding reads -n team-b --role reader --serviceaccount team-b:robot --user bob");
  CHECK(get("rolebinding reads -n team-b", "'{.roleRef.kind}/{.roleRef.name}/{.subjects[*].kind}'") == "Role/reader/User ServiceAccount");
  // The binding is enforced: the service account may get pod x in team-b, and no other.
  CHECK(trim(h.k("auth can-i get pods/x -n team-b --as system:serviceaccount:team-b:robot").output) == "yes");
  CHECK(trim(h.k("auth can-i get pods/y -n team-b --as system:serviceaccount:team-b:robot").output) == "no");
  run("create clusterrole health --verb get --non-resource-url /healthz");
  run("create clusterrolebinding health --clusterrole health --user alice");
  CHECK(get("clusterrolebinding health", "'{.roleRef.name}/{.subjects[0].name}'") == "health/alice");
  run("create priorityclass below --value -5 --description spare --preemption-policy Never");
  CHECK(get("priorityclass below", "'{.value}/{.description}/{.preemptionPolicy}'") == "-5/spare/Never");
}

TEST_CASE("kubectl drain evicts through the eviction API, respecting the PodDisruptionBudget", "[http][kubectl]") {
  Harness h(demo());
  REQUIRE(eventually([&] { return h.k("get pods -n shop").output.find("Pending") == std::string::npos; }));
  auto drain = h.k("drain ondemand-1 --ignore-daemonsets --timeout=60s");
  INFO(drain.output);
  REQUIRE(drain.status == 0);
  CHECK(drain.output.find("node/ondemand-1 cordoned") != std::string::npos);
  CHECK(drain.output.find("evicting pod shop/web-7d4b9c-x1a2b") != std::string::npos);
  CHECK(drain.output.find("node/ondemand-1 drained") != std::string::npos);
  auto wide = h.k("get pods -n shop -o wide");
  CHECK(wide.output.find("ondemand-1") == std::string::npos);
  // Every eviction went through pods/eviction, none through DELETE.
  int evictions = 0, deletes = 0;
  for (const auto& a : h.sim->audit()) {
    if (a.resource == "pods/eviction" && a.code == 201) ++evictions;
    if (a.verb == "delete" && a.resource == "pods") ++deletes;
  }
  CHECK(evictions == 2);
  CHECK(deletes == 0);
  auto events = h.k("events -n shop");
  CHECK(events.output.find("Evicted") != std::string::npos);
  CHECK(events.output.find("Scheduled") != std::string::npos);
  CHECK(h.k("get events -n shop").output.find("LAST SEEN   TYPE     REASON") == 0);

  // ondemand-4 holds two pods of web, whose budget allows one disruption: an eviction of the
  // second answers 429 while the first's replacement is not Ready, so drain keeps retrying.
  // Deterministically: once the drained pod's replacement is Ready (the budget allows one
  // again), every node is cordoned, so the next replacement stays Pending whatever the timing
  // (the simulation runs 20 times faster than the wall clock: a replacement is Ready in 50 ms).
  REQUIRE(eventually([&] { return h.k("get pdb web-pdb -n shop -o jsonpath={.status.disruptionsAllowed}").output == "1"; },
                     std::chrono::seconds(20)));
  REQUIRE(h.k("cordon --selector=kubernetes.io/hostname").status == 0);
  auto direct = h.curl(fmt::format(
      "-o /dev/null -w '%{{http_code}}' -X POST -H 'Content-Type: application/json' -d {} {}/api/v1/namespaces/shop/pods/{}/eviction",
      shell_quote(R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-7d4b9c-b5d6f"}})"), h.sim->url(),
      "web-7d4b9c-b5d6f"));
  CHECK(direct.output == "201");
  auto blocked = h.curl(fmt::format(
      "-o /dev/null -w '%{{http_code}}' -X POST -H 'Content-Type: application/json' -d {} {}/api/v1/namespaces/shop/pods/{}/eviction",
      shell_quote(R"({"metadata":{"name":"web-7d4b9c-g7l8q"}})"), h.sim->url(), "web-7d4b9c-g7l8q"));
  CHECK(blocked.output == "429");
}

TEST_CASE("kubectl cordon, taint and a stale patch behave as on a real cluster", "[http][kubectl]") {
  Harness h(demo());
  REQUIRE(h.k("cordon spot-1").status == 0);
  CHECK(h.k("get node spot-1").output.find("Ready,SchedulingDisabled") != std::string::npos);
  REQUIRE(h.k("uncordon spot-1").status == 0);
  REQUIRE(h.k("taint nodes spot-1 maint=true:NoSchedule").status == 0);
  CHECK(h.k("get node spot-1 -o jsonpath={.spec.taints[0].key}").output == "maint");
  REQUIRE(h.k("taint nodes spot-1 maint-").status == 0);
  auto stale = h.k("patch node spot-1 --type merge -p '{\"metadata\":{\"resourceVersion\":\"1\",\"labels\":{\"x\":\"y\"}}}'");
  CHECK(stale.status != 0);
  CHECK(stale.output.find("Error from server (Conflict): Operation cannot be fulfilled on nodes \"spot-1\"") != std::string::npos);
  auto test = h.k("patch node spot-1 --type json -p '[{\"op\":\"test\",\"path\":\"/metadata/name\",\"value\":\"x\"}]'");
  CHECK(test.output.find("The request is invalid: testing value /metadata/name failed") != std::string::npos);
}

TEST_CASE("kubectl scale goes through the scale subresource, and kubectl get shows workloads' columns", "[http][kubectl]") {
  SimulatorOptions o = demo();
  o.scenario_text = read_file(kScenarios + "/demo.yaml").value() + R"(
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cart, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: cart}}
  template:
    metadata: {labels: {app: cart}}
    spec:
      containers: [{name: cart, image: registry.example/cart:1, resources: {requests: {cpu: 100m}}}]
)";
  o.scenario_path.clear();
  Harness h(std::move(o));
  REQUIRE(eventually([&] { return h.k("get deploy cart -n shop -o jsonpath={.status.readyReplicas}").output == "2"; }));
  auto deploys = h.k("get deploy -n shop");
  CHECK(deploys.output.starts_with("NAME   READY   UP-TO-DATE   AVAILABLE   AGE\ncart   2/2     2            2           "));
  CHECK(h.k("get ds -n kube-system").output.find("UP-TO-DATE   AVAILABLE   NODE SELECTOR   AGE") != std::string::npos);

  auto up = h.k("scale deploy cart -n shop --replicas=3");
  CHECK(up.output == "deployment.apps/cart scaled\n");
  REQUIRE(eventually([&] { return h.k("get deploy cart -n shop -o jsonpath={.status.readyReplicas}").output == "3"; }));
  auto guarded = h.k("scale deploy cart -n shop --current-replicas=2 --replicas=1");
  CHECK(guarded.status != 0);
  CHECK(guarded.output.find("Expected replicas to be 2, was 3") != std::string::npos);
  CHECK(h.k("scale deploy cart -n shop --current-replicas=3 --replicas=1").status == 0);
  REQUIRE(eventually([&] {
    auto pods = h.k("get pods -n shop -l app=cart -o name").output;
    return std::count(pods.begin(), pods.end(), '\n') == 1;
  }));
  REQUIRE(h.k("scale statefulset billing -n shop --replicas=2").status == 0);
  REQUIRE(eventually([&] { return h.k("get pod billing-1 -n shop").status == 0; }));
  auto ds = h.k("scale ds node-agent -n kube-system --replicas=2");
  CHECK(ds.status != 0);  // DaemonSets have no scale subresource on a real cluster either
  // What kubectl sent: a merge patch, then (with --current-replicas) a read and a PUT of the Scale.
  int patches = 0, puts = 0, gets = 0;
  for (const auto& a : h.sim->audit()) {
    if (a.resource != "deployments/scale") continue;
    patches += a.verb == "patch";
    puts += a.verb == "update";
    gets += a.verb == "get";
  }
  CHECK(patches == 1);
  CHECK(puts == 1);
  CHECK(gets == 2);
}

TEST_CASE("a forced 410 makes a watching client-go reflector relist", "[http][kubectl]") {
  Harness h(demo(1));
  h.sim->clear_audit();
  REQUIRE(h.curl("-X POST -d '{\"resource\":\"pods\"}' " + h.sim->url() + "/_sim/watch/expire").status == 0);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    run(h.kubectl + " delete pod -n shop api-7d4b9c-k8s2q --grace-period=0 --wait=false");
  });
  auto wait = h.k("wait --for=delete pod/api-7d4b9c-k8s2q -n shop --timeout=30s");
  killer.join();
  INFO(wait.output);
  CHECK(wait.status == 0);
  int watches = 0, lists_after_expiry = 0;
  bool expired_seen = false;
  for (const auto& a : h.sim->audit()) {
    if (a.resource != "pods" || a.path.find("/namespaces/shop/pods") == std::string::npos) continue;
    // kubectl 1.35 and later list through a watch that sends the initial events first.
    bool streaming_list = a.verb == "watch" && a.query.find("sendInitialEvents=true") != std::string::npos;
    if ((a.verb == "list" || streaming_list) && expired_seen) ++lists_after_expiry;
    if (a.verb == "watch") {
      ++watches;
      expired_seen = true;
    }
  }
  CHECK(watches >= 2);             // the expired watch and the one after the relist
  CHECK(lists_after_expiry >= 1);  // the relist
}

TEST_CASE("HTTPS needs a valid bearer token or client certificate", "[http][tls]") {
  SimulatorOptions o = demo();
  o.tls = true;
  o.tokens = {{"secret-token", "alice"}};
  Harness h(o);
  CHECK(h.k("get nodes").status == 0);
  auto anonymous = h.curl("-o /dev/null -w '%{http_code}' " + h.sim->url() + "/api/v1/nodes");
  CHECK(anonymous.output == "401");
  auto body = h.curl(h.sim->url() + "/api/v1/nodes");
  CHECK(
      body.output ==
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})");
  auto wrong = h.curl("-o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' " + h.sim->url() + "/api/v1/nodes");
  CHECK(wrong.output == "401");
  auto right = h.curl("-o /dev/null -w '%{http_code}' -H 'Authorization: Bearer secret-token' " + h.sim->url() + "/api/v1/nodes");
  CHECK(right.output == "200");
  REQUIRE(h.sim->ca());
  auto client = h.sim->ca()->issue_client("bob", {"system:masters"});
  REQUIRE(client);
  h.dir.write("bob.crt", client->cert_pem);
  h.dir.write("bob.key", client->key_pem);
  auto cert = h.curl(fmt::format("-o /dev/null -w '%{{http_code}}' --cert {} --key {} {}/api/v1/nodes", h.dir.file("bob.crt"),
                                 h.dir.file("bob.key"), h.sim->url()));
  CHECK(cert.output == "200");
  bool bob = false, alice = false;
  for (const auto& a : h.sim->audit()) {
    bob |= a.user == "bob";
    alice |= a.user == "alice";
  }
  CHECK(bob);
  CHECK(alice);
  REQUIRE(h.sim->write_kubeconfig(h.dir.file("bad-token"), "nope"));
  auto kubectl_bad = run(fmt::format("kubectl --kubeconfig {} --cache-dir {} get nodes", h.dir.file("bad-token"), h.dir.file("c2")));
  CHECK(kubectl_bad.status != 0);
  CHECK(kubectl_bad.output.find("You must be logged in to the server") != std::string::npos);
}

TEST_CASE("a watch is a chunked JSON stream that ends at timeoutSeconds", "[http][watch]") {
  SimulatorOptions o = demo();
  o.bookmark_interval = std::chrono::milliseconds(200);
  Harness h(o);
  auto r =
      h.curl("-D " + h.dir.file("headers") + " '" + h.sim->url() + "/api/v1/nodes?watch=true&allowWatchBookmarks=true&timeoutSeconds=1'");
  REQUIRE(r.status == 0);
  auto headers = read_file(h.dir.file("headers")).value();
  CHECK(headers.find("Transfer-Encoding: chunked") != std::string::npos);
  CHECK(headers.find("Content-Type: application/json") != std::string::npos);
  auto lines = split(trim(r.output), '\n');
  int added = 0, bookmarks = 0;
  for (auto line : lines) {
    Doc d;
    REQUIRE(parse_json(line, d));
    if (json_string(d, {"type"}) == "ADDED") ++added;
    if (json_string(d, {"type"}) == "BOOKMARK") ++bookmarks;
  }
  CHECK(added == 6);
  CHECK(bookmarks >= 2);  // periodic ones and one just before the close
}

TEST_CASE("stopping with a watch stuck in a write to a client that does not read leaves nothing behind", "[http][watch]") {
  // 3,000 nodes with 2 KB annotations: a watch's first events are about 7 MB, more than a socket's
  // buffers hold, so the write stays pending while the simulator stops. Its coroutine is then
  // destroyed with the io_context, and must not touch anything destroyed before it.
  std::string scenario = R"({"kind":"List","apiVersion":"v1","items":[)";
  const std::string padding(2048, 'x');
  for (int i = 0; i < 3000; ++i)
    scenario += fmt::format(R"({}{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n{}","annotations":{{"pad":"{}"}}}}}})",
                            i ? "," : "", i, padding);
  scenario += "]}";
  for (int round = 0; round < 3; ++round) {
    SimulatorOptions o;
    o.scenario_text = scenario;
    auto sim = std::make_unique<Simulator>(o);
    REQUIRE(sim->start());
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(sim->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    std::string req = "GET /api/v1/nodes?watch=true HTTP/1.1\r\nHost: kubesim\r\n\r\n";
    REQUIRE(::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()));
    // The watch is registered and writing once its response headers arrive.
    char head[256];
    REQUIRE(::recv(fd, head, sizeof head, 0) > 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    sim.reset();
    ::close(fd);
  }
  SUCCEED("three simulators stopped with a stuck watch each");
}

TEST_CASE("injected faults: errors, a connection reset mid-body, and dropped watches", "[http][faults]") {
  Harness h(demo());
  REQUIRE(h.curl(fmt::format("-X POST -d {} {}/_sim/faults", shell_quote(R"({"verb":"list","resource":"nodes","status":503,"count":2})"),
                             h.sim->url()))
              .status == 0);
  auto code = [&] { return h.curl("-o /dev/null -w '%{http_code}' " + h.sim->url() + "/api/v1/nodes").output; };
  CHECK(code() == "503");
  CHECK(code() == "503");
  CHECK(code() == "200");
  h.curl(fmt::format("-X POST -d {} {}/_sim/faults", shell_quote(R"({"verb":"get","resource":"nodes","reset":true,"count":1})"),
                     h.sim->url()));
  auto reset = h.curl(h.sim->url() + "/api/v1/nodes/spot-1");
  CHECK(reset.status != 0);  // curl: transfer closed with outstanding read data, or reset
  CHECK(h.curl(h.sim->url() + "/api/v1/nodes/spot-1").status == 0);

  h.curl(fmt::format("-X POST -d {} {}/_sim/faults",
                     shell_quote(R"({"verb":"watch","resource":"nodes","watchDropAfterEvents":2,"count":1})"), h.sim->url()));
  auto dropped = h.curl("'" + h.sim->url() + "/api/v1/nodes?watch=true&timeoutSeconds=5'");
  CHECK(dropped.status != 0);  // no final chunk
  CHECK(std::count(dropped.output.begin(), dropped.output.end(), '\n') == 2);

  h.curl(fmt::format("-X POST -d {} {}/_sim/faults", shell_quote(R"({"verb":"get","resource":"nodes","delayMs":400,"count":1})"),
                     h.sim->url()));
  auto slow = h.curl("-o /dev/null -w '%{time_total}' " + h.sim->url() + "/api/v1/nodes/spot-1");
  CHECK(std::stod(slow.output) >= 0.4);

  // Dropping open watches ends them abruptly; pausing the scheduler leaves new pods pending.
  std::thread dropper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    h.curl("-X POST " + h.sim->url() + "/_sim/watch/drop");
  });
  auto watch = h.curl("'" + h.sim->url() + "/api/v1/nodes?watch=true&timeoutSeconds=10'");
  dropper.join();
  CHECK(watch.status != 0);
  CHECK(std::count(watch.output.begin(), watch.output.end(), '\n') == 6);
  REQUIRE(h.curl("-X POST -d '{\"scheduler\":false}' " + h.sim->url() + "/_sim/controllers").status == 0);
  h.dir.write("p.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: waiting}\nspec: {containers: [{name: c}]}\n");
  REQUIRE(h.k("apply -f " + h.dir.file("p.yaml")).status == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(h.k("get pod waiting -o jsonpath={.spec.nodeName}").output.empty());
  REQUIRE(h.curl("-X POST -d '{\"scheduler\":true}' " + h.sim->url() + "/_sim/controllers").status == 0);
  CHECK(eventually([&] { return !h.k("get pod waiting -o jsonpath={.spec.nodeName}").output.empty(); }));

  CHECK(h.curl("-X DELETE " + h.sim->url() + "/_sim/faults").status == 0);
  auto state = h.curl(h.sim->url() + "/_sim/state");
  CHECK(state.output.find("\"faults\":0") != std::string::npos);
}

TEST_CASE("a kubectl JSON dump of one cluster loads as another's scenario", "[http][scenario]") {
  Harness h(demo());
  REQUIRE(eventually([&] { return h.k("get pods -A").output.find("Pending") == std::string::npos; }));
  auto dump = h.k("get nodes,pods,pdb -A -o json");
  REQUIRE(dump.status == 0);
  SimulatorOptions o;
  o.scenario_text = dump.output;
  o.cluster.workloads = false;  // the dump has pods but not their ReplicaSets
  Harness copy(o);
  auto pods = copy.k("get pods -A -o wide");
  CHECK(pods.output.find("web-7d4b9c-x1a2b") != std::string::npos);
  CHECK(pods.output.find("Running") != std::string::npos);
  CHECK(copy.k("get nodes").output.find("spot-2") != std::string::npos);
  CHECK(copy.k("get pdb -n shop").output.find("web-pdb") != std::string::npos);
}

TEST_CASE("the kubesim binary: help, bad flags, port file, kubeconfig and a clean SIGTERM", "[http][binary]") {
  require_tool("kubectl");
  TempDir dir;
  auto help = run(std::string(KUBESIM_BINARY) + " --help");
  CHECK(help.status == 0);
  for (auto flag : {"--scenario", "--port", "--port-file", "--kubeconfig-out", "--tls", "--token-file", "--time-scale", "--audit-log"})
    CHECK(help.output.find(flag) != std::string::npos);
  auto bad = run(std::string(KUBESIM_BINARY) + " --frobnicate");
  CHECK(bad.status == 2);
  CHECK(bad.output.find("unknown flag \"--frobnicate\"") != std::string::npos);
  auto bad_scale = run(std::string(KUBESIM_BINARY) + " --time-scale fast");
  CHECK(bad_scale.output.find("--time-scale: want a positive number") != std::string::npos);
  auto missing = run(std::string(KUBESIM_BINARY) + " --scenario /nonexistent.yaml");
  CHECK(missing.status == 1);
  CHECK(missing.output.find("/nonexistent.yaml") != std::string::npos);

  std::string cmd = fmt::format("{} --scenario {}/demo.yaml --port-file {} --kubeconfig-out {} --audit-log {} >{} 2>&1 & echo $!",
                                KUBESIM_BINARY, kScenarios, dir.file("port"), dir.file("kubeconfig"), dir.file("audit"), dir.file("log"));
  auto started = run(cmd);
  std::string pid(trim(started.output));
  REQUIRE(eventually([&] { return read_file(dir.file("port")).has_value(); }));
  auto nodes = run(fmt::format("kubectl --kubeconfig {} --cache-dir {} get nodes", dir.file("kubeconfig"), dir.file("cache")));
  CHECK(nodes.status == 0);
  run("kill -TERM " + pid);
  CHECK(eventually([&] { return run("kill -0 " + pid).status != 0; }));
  auto audit = read_file(dir.file("audit"));
  REQUIRE(audit);
  CHECK(audit->find(R"("verb":"list","method":"GET","path":"/api/v1/nodes","query":"limit=500")") != std::string::npos);
  auto log = read_file(dir.file("log")).value();
  CHECK(log.find("kubesim listening on http://127.0.0.1:") != std::string::npos);
  CHECK(log.find("stopping") != std::string::npos);
}

TEST_CASE("service-account tokens get exactly what Roles and ClusterRoles grant them", "[http][rbac]") {
  SimulatorOptions o = demo();
  o.tls = true;
  o.tokens = {{"admin-token", "admin"}, {"sa-token", "system:serviceaccount:spotshift:spotshift"}};
  Harness h(o);
  REQUIRE(h.sim->write_kubeconfig(h.dir.file("sa"), "sa-token"));
  const std::string sa = fmt::format("kubectl --kubeconfig {} --cache-dir {} --request-timeout=20s ", h.dir.file("sa"), h.dir.file("c2"));
  const std::string user = "system:serviceaccount:spotshift:spotshift";

  // Nothing is granted yet: the exact Status a real apiserver sends.
  auto body = h.curl("-H 'Authorization: Bearer sa-token' " + h.sim->url() + "/api/v1/nodes");
  CHECK(
      body.output ==
      fmt::format(
          R"({{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"nodes is forbidden: User \"{}\" cannot list resource \"nodes\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{{"kind":"nodes"}},"code":403}})",
          user));
  auto denied = run(sa + "get pods -A");
  CHECK(denied.status != 0);
  CHECK_THAT(
      denied.output,
      Catch::Contains(fmt::format(
          "Error from server (Forbidden): pods is forbidden: User \"{}\" cannot list resource \"pods\" in API group \"\" at the cluster scope",
          user)));
  // Other users are not restricted.
  CHECK(h.k("get pods -A").status == 0);

  h.dir.write("rbac.yaml", R"(apiVersion: v1
kind: Namespace
metadata: {name: spotshift}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules:
- apiGroups: [""]
  resources: [nodes, pods]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [pods/eviction]
  verbs: [create]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [list]
  resourceNames: [only-this-one]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects:
- {kind: ServiceAccount, name: spotshift, namespace: spotshift}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: leases, namespace: spotshift}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: leases, namespace: spotshift}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leases}
subjects:
- {kind: Group, name: "system:serviceaccounts:spotshift"}
)");
  auto applied = h.k("apply -f " + h.dir.file("rbac.yaml"));
  REQUIRE(applied.status == 0);
  INFO(applied.output);

  CHECK(run(sa + "get nodes").status == 0);
  CHECK(run(sa + "get pods -A").status == 0);
  // Granted verbs only: deleting a pod is not among them.
  auto pods = h.k("get pods -n shop -o name");
  REQUIRE(pods.status == 0);
  auto pod = std::string(trim(split(pods.output, '\n').at(0)));
  REQUIRE(pod.starts_with("pod/"));
  std::string name = pod.substr(4);
  auto del = run(sa + "delete pod -n shop " + name);
  CHECK(del.status != 0);
  CHECK_THAT(del.output,
             Catch::Contains(fmt::format(
                 "pods \"{}\" is forbidden: User \"{}\" cannot delete resource \"pods\" in API group \"\" in the namespace \"shop\"", name,
                 user)));
  // A subresource needs its own rule; resourceNames never match a list.
  auto eviction = h.curl(
      fmt::format("-o /dev/null -w '%{{http_code}}' -H 'Authorization: Bearer sa-token' -H 'Content-Type: application/json' -X POST "
                  "-d '{{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{{\"name\":\"{0}\",\"namespace\":\"shop\"}}}}' "
                  "{1}/api/v1/namespaces/shop/pods/{0}/eviction",
                  name, h.sim->url()));
  CHECK(eviction.output != "403");
  auto binding =
      h.curl(fmt::format("-o /dev/null -w '%{{http_code}}' -H 'Authorization: Bearer sa-token' -H 'Content-Type: application/json' -X POST "
                         "-d '{{}}' {}/api/v1/namespaces/shop/pods/{}/binding",
                         h.sim->url(), name));
  CHECK(binding.output == "403");
  auto pdbs = run(sa + "get pdb -A");
  CHECK(pdbs.status != 0);
  CHECK_THAT(pdbs.output, Catch::Contains("cannot list resource \"poddisruptionbudgets\" in API group \"policy\" at the cluster scope"));
  // The Role binds through the namespace's service-account group, and only in its namespace.
  h.dir.write("lease.yaml", R"(apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: spotshift}
spec: {holderIdentity: a, leaseDurationSeconds: 15}
)");
  CHECK(run(sa + "create -n spotshift -f " + h.dir.file("lease.yaml")).status == 0);
  CHECK(run(sa + "get lease -n spotshift spotshift").status == 0);
  auto other_ns = run(sa + "create -n default -f " + h.dir.file("lease.yaml"));
  CHECK(other_ns.status != 0);
  CHECK_THAT(
      other_ns.output,
      Catch::Contains(fmt::format(
          "leases.coordination.k8s.io is forbidden: User \"{}\" cannot create resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"default\"",
          user)));
  // Removing the binding takes the grant away at once.
  REQUIRE(h.k("delete clusterrolebinding reader").status == 0);
  CHECK(run(sa + "get nodes").status != 0);
}

TEST_CASE("kubectl auth can-i and auth whoami, as oneself and through --as impersonation", "[http][rbac]") {
  SimulatorOptions o = demo();
  o.tls = true;
  o.tokens = {{"admin-token", "admin"}, {"sa-token", "system:serviceaccount:spotshift:spotshift"}};
  Harness h(o);
  const std::string user = "system:serviceaccount:spotshift:spotshift";
  const std::string as = " --as=" + user;
  // kubectl sends these reviews as protobuf; the answers come back as JSON.
  auto admin = h.k("auth can-i create pods --subresource=eviction -n shop");
  CHECK(admin.status == 0);
  CHECK(trim(admin.output) == "yes");
  auto denied = h.k("auth can-i create pods --subresource=eviction -n shop" + as);
  CHECK(denied.status != 0);
  CHECK(trim(denied.output) == "no");
  auto forbidden = h.k("get pods -n shop" + as);
  CHECK(forbidden.status != 0);
  CHECK_THAT(forbidden.output,
             Catch::Contains(fmt::format(
                 "pods is forbidden: User \"{}\" cannot list resource \"pods\" in API group \"\" in the namespace \"shop\"", user)));
  auto whoami = h.k("auth whoami" + as);
  REQUIRE(whoami.status == 0);
  CHECK_THAT(whoami.output, Catch::Contains(user));
  CHECK_THAT(whoami.output, Catch::Contains("[system:serviceaccounts system:serviceaccounts:spotshift system:authenticated]"));
  CHECK_THAT(h.k("auth whoami").output, Catch::Contains("admin"));
  // Discovery paths are open to everyone, other non-resource URLs are not.
  CHECK(trim(h.k("auth can-i get /healthz" + as).output) == "yes");
  CHECK(trim(h.k("auth can-i get /metrics" + as).output) == "no");

  h.dir.write("rbac.yaml", R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: evictor}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [list]
- apiGroups: [""]
  resources: [pods/eviction]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: evictor, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: evictor}
subjects:
- {kind: ServiceAccount, name: spotshift, namespace: spotshift}
)");
  REQUIRE(h.k("apply -f " + h.dir.file("rbac.yaml")).status == 0);
  CHECK(trim(h.k("auth can-i create pods --subresource=eviction -n shop" + as).output) == "yes");
  CHECK(trim(h.k("auth can-i create pods --subresource=eviction -n default" + as).output) == "no");  // bound in shop only
  CHECK(trim(h.k("auth can-i delete pods -n shop" + as).output) == "no");
  CHECK(h.k("get pods -n shop" + as).status == 0);
  // --list: the bound rules of the namespace, with what every user may do.
  auto list = h.k("auth can-i --list -n shop" + as);
  REQUIRE(list.status == 0);
  auto row = [](const std::string& table, std::string_view resource) {
    for (auto line : split(table, '\n'))
      if (line.starts_with(std::string(resource) + " ")) return std::string(line);
    return std::string();
  };
  CHECK_THAT(row(list.output, "pods/eviction"), Catch::EndsWith("[create]"));
  CHECK_THAT(row(list.output, "pods"), Catch::EndsWith("[list]"));
  CHECK_THAT(list.output, Catch::Contains("selfsubjectaccessreviews.authorization.k8s.io"));
  CHECK_THAT(list.output, Catch::Contains("[/healthz]"));
  CHECK_THAT(h.k("auth can-i --list -n default" + as).output, !Catch::Contains("pods/eviction"));
  CHECK_THAT(h.k("auth can-i --list").output, Catch::Contains("*.*"));

  // A SubjectAccessReview as JSON, the way a webhook or a script asks about someone else.
  auto review = h.curl(fmt::format(
      "-H 'Authorization: Bearer admin-token' -H 'Content-Type: application/json' -X POST "
      "-d '{{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\",\"spec\":{{\"user\":\"{}\","
      "\"resourceAttributes\":{{\"namespace\":\"shop\",\"verb\":\"create\",\"resource\":\"pods\",\"subresource\":\"eviction\"}}}}}}' "
      "{}/apis/authorization.k8s.io/v1/subjectaccessreviews",
      user, h.sim->url()));
  CHECK_THAT(review.output, Catch::Contains(R"("status":{"allowed":true)"));
  auto empty = h.curl(
      "-H 'Authorization: Bearer admin-token' -H 'Content-Type: application/json' -X POST "
      "-d '{\"spec\":{\"resourceAttributes\":{\"verb\":\"get\"}}}' " +
      h.sim->url() + "/apis/authorization.k8s.io/v1/subjectaccessreviews");
  CHECK_THAT(empty.output, Catch::Contains("at least one of user or group must be specified"));

  // A service account may impersonate only with the impersonate verb.
  REQUIRE(h.sim->write_kubeconfig(h.dir.file("sa"), "sa-token"));
  const std::string sa = fmt::format("kubectl --kubeconfig {} --cache-dir {} --request-timeout=20s ", h.dir.file("sa"), h.dir.file("c2"));
  auto escalate = run(sa + "get nodes --as=admin");
  CHECK(escalate.status != 0);
  CHECK_THAT(escalate.output, Catch::Contains("Forbidden"));
  auto body = h.curl("-H 'Authorization: Bearer sa-token' -H 'Impersonate-User: admin' " + h.sim->url() + "/api/v1/nodes");
  CHECK(
      body.output ==
      fmt::format(
          R"({{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"users \"admin\" is forbidden: User \"{}\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{{"name":"admin","kind":"users"}},"code":403}})",
          user));
  // Another service account is named by its namespace and name.
  auto other = h.curl("-H 'Authorization: Bearer sa-token' -H 'Impersonate-User: system:serviceaccount:shop:other' " + h.sim->url() +
                      "/api/v1/nodes");
  CHECK_THAT(
      other.output,
      Catch::Contains(fmt::format(
          R"(serviceaccounts \"other\" is forbidden: User \"{}\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"shop\")",
          user)));
}
