#pragma once
// The real control plane (scripts/realkube.sh: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok's fake nodes on loopback) as a test fixture, and the tests' choice of
// backend. Catch tests only.

#include "support/catch.hpp"
#include "support/process.hpp"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
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
  std::string method;      // the HTTP method, from the audit verb
  std::string path;        // the request URI without its query
  std::string user_agent;
  std::string user;        // the authenticated user name
  std::string verb;        // the audit verb: get, list, watch, create, update, patch, delete
  std::string resource;    // "pods", "pods/eviction", "" for a non-resource URL
  int code = 0;
};

class RealCluster {
 public:
  // Starts a control plane with its state under dir and loads the files (YAML or JSON Lists). A
  // missing component fails the test with the command that builds it.
  RealCluster(const std::string& dir, const std::vector<std::string>& files) : dir_(dir) {
    auto check = run(fmt::format("{}/scripts/kube-tools.sh check 2>&1", kSourceRoot()));
    if (check.status != 0)
      FAIL("the real control plane's components are not built: " << check.output
                                                                 << "build them with scripts/kube-tools.sh build (make test does)");
    std::string cmd = fmt::format("{}/scripts/realkube.sh start {}", kSourceRoot(), shell_quote(dir));
    for (const auto& f : files) cmd += " " + shell_quote(f);
    auto r = run(cmd + " 2>&1");
    started_ = true;
    INFO(r.output);
    REQUIRE(r.status == 0);
  }
  ~RealCluster() {
    if (started_) run(fmt::format("{}/scripts/realkube.sh stop {} >/dev/null 2>&1", kSourceRoot(), shell_quote(dir_)));
  }
  RealCluster(const RealCluster&) = delete;
  RealCluster& operator=(const RealCluster&) = delete;

  std::string kubeconfig() const { return dir_ + "/kubeconfig"; }
  std::string dir() const { return dir_; }
  std::string log(const std::string& component) const { return read(dir_ + "/logs/" + component + ".log"); }

  // Every request the audit log holds so far (written before each response: --audit-log-mode
  // blocking).
  std::vector<AuditRecord> audit() const {
    std::vector<AuditRecord> out;
    std::ifstream in(dir_ + "/logs/audit.log");
    std::string line;
    while (std::getline(in, line)) {
      rapidjson::Document d;
      if (d.Parse(line.data(), line.size()).HasParseError() || !d.IsObject()) continue;
      auto str = [&](const char* k) { return d.HasMember(k) && d[k].IsString() ? std::string(d[k].GetString()) : std::string(); };
      AuditRecord r;
      std::string verb = str("verb");
      r.method = verb == "create" ? "POST" : verb == "update" ? "PUT" : verb == "patch" ? "PATCH"
               : verb == "delete" || verb == "deletecollection" ? "DELETE" : "GET";
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
    auto r = run(fmt::format("{}/scripts/kube-tools.sh bin", kSourceRoot()));
    REQUIRE(r.status == 0);
    std::string bin = r.output.substr(0, r.output.find_last_not_of("\n") + 1);
    return bin + "/" + name;
  }
  std::string server() const {
    std::string s = read(dir_ + "/server");
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
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string dir_;
  bool started_ = false;
};

}  // namespace spotshift::testing
