#pragma once
// kubesim as a library: an HTTP(S) Kubernetes API server on 127.0.0.1 running on its own thread,
// for in-process tests, and the core of the kubesim binary. This header has no Beast or Asio.

#include "cluster.hpp"
#include "faults.hpp"
#include "kube/certs.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spotshift::kubesim {

using kube::CertificateAuthority;
using kube::CertPair;

struct SimulatorOptions {
  std::string scenario_path;  // YAML or JSON List; empty: an empty cluster
  std::string scenario_text;  // used when scenario_path is empty
  std::string address = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port
  bool tls = false;
  // TLS material; when empty a CA and a serving certificate for 127.0.0.1/localhost are made.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_ca_file;  // the CA to put in written kubeconfigs and to verify client certificates
  // Bearer tokens (TLS only): "token" or "token,user,uid,\"group1,group2\"" lines. With TLS and no
  // token file, one admin token is generated.
  std::string token_file;
  std::vector<std::pair<std::string, std::string>> tokens;  // token -> user, added to the file's
  double time_scale = 1.0;
  std::string audit_log_path;
  std::chrono::milliseconds bookmark_interval{60000};
  std::chrono::seconds continue_ttl{300};
  ClusterOptions cluster;
};

// One line of the audit log.
struct AuditRecord {
  std::string time;
  std::string user_agent;
  std::string user;
  std::string verb;
  std::string method;
  std::string path;
  std::string query;
  std::string resource;
  int code = 0;
};

class Simulator {
 public:
  explicit Simulator(SimulatorOptions options);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Loads the scenario, listens, and starts serving on a thread of its own.
  Result<void> start();
  // Stops serving and joins the thread. Idempotent.
  void stop();

  uint16_t port() const;
  std::string url() const;  // http(s)://127.0.0.1:PORT
  const std::string& ca_pem() const;
  const CertificateAuthority* ca() const;  // the generated CA, when kubesim made one
  std::string admin_token() const;

  // A kubeconfig for this server: HTTPS ones carry the CA data and a token.
  std::string kubeconfig(std::optional<std::string> token = std::nullopt) const;
  Result<void> write_kubeconfig(const std::string& path, std::optional<std::string> token = std::nullopt) const;

  Faults& faults();
  // Runs fn on the simulator's thread and waits for it: the safe way for tests to look at or
  // change the cluster directly.
  void run(const std::function<void(Cluster&)>& fn);
  void drop_watches();

  std::vector<AuditRecord> audit() const;
  void clear_audit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string to_json(const AuditRecord& r);

}  // namespace spotshift::kubesim
