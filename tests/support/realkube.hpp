#pragma once
// The real control plane (scripts/realkube.sh: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok's fake nodes on loopback) as a test fixture, and the tests' choice of
// backend. Catch tests only.

#include "core/strings.hpp"
#include "support/catch.hpp"
#include "support/process.hpp"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace spotshift::testing {

// The end-to-end tests run against kubesim unless SPOTSHIFT_E2E_BACKEND=real.
inline bool real_backend() {
  const char* b = std::getenv("SPOTSHIFT_E2E_BACKEND");
  return b != nullptr && std::string(b) == "real";
}

// One request as the API server's audit log recorded it.
struct AuditRecord {
  std::string method;  // the HTTP method, from the audit verb
  std::string path;    // the request URI without its query
  std::string user_agent;
  std::string user;      // the authenticated user name
  std::string verb;      // the audit verb: get, list, watch, create, update, patch, delete
  std::string resource;  // "pods", "pods/eviction", "" for a non-resource URL
  int code = 0;
};

class RealCluster {
 public:
  // The control plane of this test process: started at first use under a directory of its own,
  // stopped (and the directory removed, unless SPOTSHIFT_REALKUBE_KEEP is set) when the process
  // exits. A missing component fails the test with the command that builds it.
  static RealCluster& shared() {
    static std::unique_ptr<RealCluster> instance;
    if (!instance) {
      char dir[] = "/tmp/spotshift-realkube.XXXXXX";
      REQUIRE(mkdtemp(dir) != nullptr);
      instance.reset(new RealCluster(dir));
    }
    return *instance;
  }
  // A fresh cluster for the next test (scripts/realkube.sh reset), loaded with the files (YAML or
  // JSON Lists); audit() counts requests from here on.
  void fresh(const std::vector<std::string>& files) {
    auto r = run(fmt::format("{}/scripts/realkube.sh reset {} 2>&1", kSourceRoot(), shell_quote(dir_)));
    INFO("realkube.sh reset\n" << r.output);
    REQUIRE(r.status == 0);
    if (!files.empty()) {
      std::string cmd = fmt::format("{}/scripts/realkube.sh load {}", kSourceRoot(), shell_quote(dir_));
      for (const auto& f : files) cmd += " " + shell_quote(f);
      auto l = run(cmd + " 2>&1");
      INFO(l.output);
      REQUIRE(l.status == 0);
    }
    audit_from_ = count_audit_lines();
  }
  ~RealCluster() {
    if (!started_) return;
    run(fmt::format("{}/scripts/realkube.sh stop {} >/dev/null 2>&1", kSourceRoot(), shell_quote(dir_)));
    if (!std::getenv("SPOTSHIFT_REALKUBE_KEEP")) run("rm -rf " + shell_quote(dir_));
  }
  RealCluster(const RealCluster&) = delete;
  RealCluster& operator=(const RealCluster&) = delete;

  std::string kubeconfig() const { return dir_ + "/kubeconfig"; }
  std::string dir() const { return dir_; }

  // Every request the audit log holds since the last fresh() (written before each response:
  // --audit-log-mode blocking).
  std::vector<AuditRecord> audit() const {
    std::vector<AuditRecord> out;
    std::ifstream in(dir_ + "/logs/audit.log");
    std::string line;
    for (size_t skip = 0; skip < audit_from_ && std::getline(in, line); ++skip) {}
    while (std::getline(in, line)) {
      rapidjson::Document d;
      if (d.Parse(line.data(), line.size()).HasParseError() || !d.IsObject()) continue;
      auto str = [&](const char* k) { return d.HasMember(k) && d[k].IsString() ? std::string(d[k].GetString()) : std::string(); };
      AuditRecord r;
      std::string verb = str("verb");
      r.method = verb == "create"                                 ? "POST"
                 : verb == "update"                               ? "PUT"
                 : verb == "patch"                                ? "PATCH"
                 : verb == "delete" || verb == "deletecollection" ? "DELETE"
                                                                  : "GET";
      r.path = str("requestURI");
      r.path = r.path.substr(0, r.path.find('?'));
      r.user_agent = str("userAgent");
      r.verb = verb;
      if (d.HasMember("user") && d["user"].IsObject() && d["user"].HasMember("username") && d["user"]["username"].IsString())
        r.user = d["user"]["username"].GetString();
      if (d.HasMember("objectRef") && d["objectRef"].IsObject()) {
        const auto& ref = d["objectRef"];
        if (ref.HasMember("resource") && ref["resource"].IsString()) r.resource = ref["resource"].GetString();
        if (ref.HasMember("subresource") && ref["subresource"].IsString()) r.resource += std::string("/") + ref["subresource"].GetString();
      }
      if (d.HasMember("responseStatus") && d["responseStatus"].IsObject() && d["responseStatus"].HasMember("code"))
        r.code = d["responseStatus"]["code"].GetInt();
      out.push_back(std::move(r));
    }
    return out;
  }

  // A component built by scripts/kube-tools.sh ("helm", "kubectl", ...): its path.
  static std::string tool(const std::string& name) {
    static const std::string bin = [] {
      auto r = run(fmt::format("{}/scripts/kube-tools.sh bin", kSourceRoot()));
      REQUIRE(r.status == 0);
      return r.output.substr(0, r.output.find_last_not_of("\n") + 1);
    }();
    return bin + "/" + name;
  }
  std::string server() const {
    auto text = read_file(dir_ + "/server");
    std::string s = text ? *text : std::string();
    return s.substr(0, s.find_last_not_of("\n") + 1);
  }
  std::string ca_file() const { return dir_ + "/pki/ca.crt"; }
  // A kubeconfig that authenticates with a bearer token (a service account's, say).
  std::string kubeconfig_with_token(const std::string& path, const std::string& token) const {
    std::ofstream(path) << fmt::format(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: realkube\n  cluster: {{server: {}, certificate-authority: {}}}\n"
        "users:\n- name: token\n  user: {{token: {}}}\ncontexts:\n- name: realkube\n  context: {{cluster: realkube, user: token}}\n"
        "current-context: realkube\n",
        server(), ca_file(), token);
    return path;
  }

  static std::string kSourceRoot() { return SOURCE_ROOT; }

 private:
  explicit RealCluster(const std::string& dir) : dir_(dir) {
    auto check = run(fmt::format("{}/scripts/kube-tools.sh check 2>&1", kSourceRoot()));
    if (check.status != 0)
      FAIL("the real control plane's components are not built: " << check.output
                                                                 << "build them with scripts/kube-tools.sh build (make test does)");
    auto r = run(fmt::format("{}/scripts/realkube.sh start {} 2>&1", kSourceRoot(), shell_quote(dir)));
    started_ = true;
    INFO(r.output);
    REQUIRE(r.status == 0);
  }
  size_t count_audit_lines() const {
    std::ifstream in(dir_ + "/logs/audit.log");
    size_t n = 0;
    std::string line;
    while (std::getline(in, line)) ++n;
    return n;
  }
  std::string dir_;
  bool started_ = false;
  size_t audit_from_ = 0;
};

}  // namespace spotshift::testing
