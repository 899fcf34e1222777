#pragma once
// Where the cluster is and how to authenticate: in-cluster service account, or kubeconfig files
// merged the way kubectl merges them. No I/O beyond reading the files; no Asio.

#include "core/error.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace spotshift::kube {

// An exec credential plugin (client.authentication.k8s.io/v1).
struct ExecConfig {
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string api_version = "client.authentication.k8s.io/v1";
  std::string interactive_mode = "Never";
  bool provide_cluster_info = false;
};

struct ClientConfig {
  std::string server;  // https://host:port
  std::string scheme;  // http or https
  std::string host;    // without brackets for IPv6
  uint16_t port = 0;
  std::string ca_pem;  // empty: the system's trust store
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // SNI and verification name instead of host
  std::string token;
  std::string token_file;  // re-read periodically; beats token
  std::string client_certificate_pem;
  std::string client_key_pem;
  std::optional<ExecConfig> exec;
  std::string default_namespace = "default";
  std::string source;  // "kubeconfig /path (context x)" or "in-cluster", for messages

  bool tls() const { return scheme == "https"; }
  // host:port for messages, with brackets around IPv6 addresses.
  std::string authority() const;
};

// Fills scheme, host and port from server.
Result<void> parse_server(ClientConfig& c);

struct InClusterPaths {
  std::string token = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string ns = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};

// KUBERNETES_SERVICE_HOST/PORT and the service account files. Errors say "not in cluster" when
// the environment variables are missing.
Result<ClientConfig> in_cluster_config(const InClusterPaths& paths = {});
bool in_cluster();

// Reads and merges kubeconfig files: for clusters, contexts and users the first file that
// defines a name wins, and so does the first current-context. Relative file references resolve
// against the directory of the file that made them. Errors name the file and the field.
Result<ClientConfig> kubeconfig_config(const std::vector<std::string>& files, const std::string& context = "");

// The operator's lookup order: the --kubeconfig flag, then KUBECONFIG (a colon-separated list),
// then the in-cluster service account, then ~/.kube/config.
Result<ClientConfig> load_config(const std::string& kubeconfig_flag, const std::string& context = "");

}  // namespace spotshift::kube
