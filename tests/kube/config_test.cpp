#include "kube/config.hpp"
#include "core/strings.hpp"
#include "kube/credentials.hpp"
#include "support/catch.hpp"
#include "support/process.hpp"

#include <cstdlib>

using namespace spotshift;
using namespace spotshift::kube;
using spotshift::testing::TempDir;

namespace {
constexpr const char* kBase = R"(apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: c1, user: u1, namespace: team}
- name: other
  context: {cluster: c2, user: u2}
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority: ca.crt
    tls-server-name: kubernetes.internal
- name: c2
  cluster:
    server: http://[::1]:8080
    insecure-skip-tls-verify: true
users:
- name: u1
  user:
    token: static-token
    tokenFile: token
- name: u2
  user: {}
)";
}  // namespace

TEST_CASE("a kubeconfig resolves its context, cluster and user with relative paths", "[config]") {
  TempDir dir;
  dir.write("config", kBase);
  dir.write("ca.crt", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n");
  dir.write("token", "from-file\n");
  auto c = kubeconfig_config({dir.file("config")});
  REQUIRE(c);
  CHECK(c->server == "https://10.0.0.1:6443");
  CHECK(c->scheme == "https");
  CHECK(c->host == "10.0.0.1");
  CHECK(c->port == 6443);
  CHECK(c->ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
  CHECK(c->tls_server_name == "kubernetes.internal");
  CHECK(c->token == "static-token");
  CHECK(c->token_file == dir.file("token"));
  CHECK(c->default_namespace == "team");
  CHECK(c->source == "kubeconfig " + dir.file("config") + " (context dev)");

  auto other = kubeconfig_config({dir.file("config")}, "other");
  REQUIRE(other);
  CHECK(other->host == "::1");
  CHECK(other->port == 8080);
  CHECK(other->authority() == "[::1]:8080");
  CHECK(other->insecure_skip_tls_verify);
  CHECK(other->default_namespace == "default");
}

TEST_CASE("several kubeconfigs merge: the first definition of a name wins", "[config]") {
  TempDir dir;
  dir.write("a", R"(clusters:
- name: c1
  cluster: {server: "https://first:1"}
users:
- name: u1
  user: {token: first-token}
)");
  dir.write("b", R"(current-context: dev
contexts:
- name: dev
  context: {cluster: c1, user: u1}
clusters:
- name: c1
  cluster: {server: "https://second:2"}
users:
- name: u1
  user: {token: second-token, client-certificate-data: Y2VydA==, client-key-data: a2V5}
)");
  auto c = kubeconfig_config({dir.file("a"), dir.file("b")});
  REQUIRE(c);
  CHECK(c->server == "https://first:1");
  CHECK(c->token == "first-token");
  CHECK(c->client_certificate_pem.empty());
  auto reversed = kubeconfig_config({dir.file("b"), dir.file("a")});
  REQUIRE(reversed);
  CHECK(reversed->client_certificate_pem == "cert");
  CHECK(reversed->client_key_pem == "key");
}

TEST_CASE("kubeconfig errors name the file and the field", "[config]") {
  TempDir dir;
  struct Case {
    const char* yaml;
    const char* message;
  };
  const Case cases[] = {
      {"current-context: x\n", "context \"x\" is not defined in contexts"},
      {"contexts: [{name: x, context: {user: u}}]\ncurrent-context: x\n", "context \"x\": field cluster is missing"},
      {"contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n", "refers to cluster \"c\", which is not defined"},
      {"contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\nclusters: [{name: c, cluster: {}}]\n",
       "cluster \"c\": field server is missing"},
      {"contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\nclusters: [{name: c, cluster: {server: \"ftp://h\"}}]\n",
       "the scheme must be http or https"},
      {"contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\nclusters: [{name: c, cluster: {server: \"https://h\"}}]\n"
       "users: [{name: u, user: {auth-provider: {name: gcp}}}]\n",
       "auth-provider is the legacy authentication plugin mechanism and is not supported"},
      {"contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\nclusters: [{name: c, cluster: {server: \"https://h\"}}]\n"
       "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}}]\n",
       "exec.apiVersion \"client.authentication.k8s.io/v1alpha1\" is not supported"},
      {"contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\nclusters: [{name: c, cluster: {server: \"https://h\", certificate-authority: missing.crt}}]\n",
       "certificate-authority"},
      {"contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\nclusters: [{name: c, cluster: {server: \"https://h\", certificate-authority-data: \"!!\"}}]\n",
       "certificate-authority-data: invalid base64"},
      {"[unbalanced\n", "invalid YAML at line"},
  };
  int i = 0;
  for (const auto& c : cases) {
    INFO(c.yaml);
    std::string name = "k" + std::to_string(i++);
    dir.write(name, c.yaml);
    auto r = kubeconfig_config({dir.file(name)});
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::kConfig);
    CHECK_THAT(r.error().message, Catch::Contains("kubeconfig " + dir.file(name)));
    CHECK_THAT(r.error().message, Catch::Contains(c.message));
  }
  auto none = kubeconfig_config({dir.file("does-not-exist")});
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error().message, Catch::Contains(dir.file("does-not-exist")));
}

TEST_CASE("exec plugins are configured from the kubeconfig", "[config]") {
  TempDir dir;
  dir.write("config", R"(current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://h:1"}}]
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./plugin.sh
      args: [get-token, --fast]
      env: [{name: REGION, value: eu}]
      interactiveMode: Never
      provideClusterInfo: true
)");
  auto c = kubeconfig_config({dir.file("config")});
  REQUIRE(c);
  REQUIRE(c->exec);
  CHECK(c->exec->command == dir.file("plugin.sh"));
  CHECK(c->exec->args == std::vector<std::string>{"get-token", "--fast"});
  CHECK(c->exec->env == std::vector<std::pair<std::string, std::string>>{{"REGION", "eu"}});
  CHECK(c->exec->provide_cluster_info);
}

TEST_CASE("in-cluster configuration reads the service account", "[config]") {
  TempDir dir;
  dir.write("token", "sa-token");
  dir.write("ca.crt", "CA");
  dir.write("namespace", "spotshift-system\n");
  InClusterPaths paths{dir.file("token"), dir.file("ca.crt"), dir.file("namespace")};
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  auto out = in_cluster_config(paths);
  REQUIRE_FALSE(out);
  CHECK_THAT(out.error().message, Catch::StartsWith("not in cluster"));
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto in = in_cluster_config(paths);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  REQUIRE(in);
  CHECK(in->server == "https://[fd00::1]:443");
  CHECK(in->host == "fd00::1");
  CHECK(in->token_file == dir.file("token"));
  CHECK(in->ca_pem == "CA");
  CHECK(in->default_namespace == "spotshift-system");
}

TEST_CASE("a token file is re-read after a minute and after a 401", "[config]") {
  TempDir dir;
  dir.write("token", "one");
  ManualClock clock;
  TokenFileCredentials creds(dir.file("token"), clock);
  CHECK(creds.get(false)->token == "one");
  dir.write("token", "two");
  clock.advance(std::chrono::seconds(30));
  CHECK(creds.get(false)->token == "one");  // cached
  CHECK(creds.get(true)->token == "two");   // a 401 forces a read
  dir.write("token", "three");
  clock.advance(std::chrono::seconds(61));
  CHECK(creds.get(false)->token == "three");
}

TEST_CASE("an exec plugin's credential is cached until it expires", "[config]") {
  TempDir dir;
  // The plugin counts its runs and echoes what it was told in KUBERNETES_EXEC_INFO.
  dir.write("plugin.sh",
            "#!/bin/sh\nn=$(cat \"$COUNT\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$COUNT\"\n"
            "case \"$KUBERNETES_EXEC_INFO\" in *'\"interactive\":false'*) ;; *) exit 3;; esac\n"
            "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
            "\"status\":{\"token\":\"tok-%s\",\"expirationTimestamp\":\"%s\"}}' \"$n\" \"$EXPIRY\"\n");
  spotshift::testing::run("chmod +x " + dir.file("plugin.sh"));
  ExecConfig e;
  e.command = dir.file("plugin.sh");
  e.env = {{"COUNT", dir.file("count")}, {"EXPIRY", "2100-01-01T00:00:00Z"}};
  ManualClock clock;
  ExecCredentials creds(e, "https://h:1", "", clock);
  CHECK(creds.get(false)->token == "tok-1");
  CHECK(creds.get(false)->token == "tok-1");
  CHECK(creds.get(true)->token == "tok-2");  // re-run after a 401
  CHECK(creds.runs() == 2);

  e.env = {{"COUNT", dir.file("count2")}, {"EXPIRY", "2000-01-01T00:00:00Z"}};
  ExecCredentials expired(e, "https://h:1", "", clock);
  CHECK(expired.get(false)->token == "tok-1");
  CHECK(expired.get(false)->token == "tok-2");  // already expired: run again

  ExecConfig broken;
  broken.command = dir.file("missing-plugin");
  auto r = run_exec_plugin(broken, "", "");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("missing-plugin"));
  dir.write("bad.sh", "#!/bin/sh\necho not json\n");
  spotshift::testing::run("chmod +x " + dir.file("bad.sh"));
  broken.command = dir.file("bad.sh");
  auto bad = run_exec_plugin(broken, "", "");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("did not print an ExecCredential"));
}
