#pragma once
// The steering webhook (spec.steering: Preferred): an HTTPS server for the API server's
// mutating admission calls on pod creation (drain/steering.hpp answers them), and the serving
// certificate it needs.
//
// Certificates, unless a directory of them is given (cert-manager's, mounted from its Secret):
// the operator keeps a CA and a serving certificate in a Secret of its namespace (ca.crt, ca.key,
// tls.crt, tls.key; created when missing, shared by every replica), issues a new serving
// certificate when the names change or less than a third of its year is left (a new CA, and a new
// certificate, when less than a year of the CA's ten is left), and keeps the caBundle of every
// webhook of the MutatingWebhookConfiguration current. It looks again every minute: a Secret
// deleted or a caBundle reset (a chart upgrade) is back within a minute.
//
// Every replica serves the webhook and keeps the certificate; only the leader drains, so only
// the leader's answers can steer. With its own pod named (--webhook-leader-pod, which the chart
// fills from the downward API), the leader labels its pod spotshift.io/webhook-leader=true and
// every replica takes the label off its pod when it starts: the chart's webhook Service selects
// that label, so the API server calls the leader. A follower called all the same lets the pod
// through.

#include "core/error.hpp"
#include "drain/steering.hpp"
#include "kube/client.hpp"
#include "runtime/metrics.hpp"
#include "runtime/timers.hpp"

#include <memory>
#include <string>
#include <vector>

namespace spotshift::op {

namespace asio = boost::asio;

struct WebhookOptions {
  runtime::BindAddress address;  // where to serve (path /mutate-pods)
  // Generated certificates: the Secret that keeps them.
  std::string secret_namespace;
  std::string secret_name;
  // The MutatingWebhookConfiguration whose caBundle is kept current (none: left alone).
  std::string configuration;
  std::vector<std::string> dns_names;  // the serving certificate's names (the Service's)
  std::vector<std::string> ip_addresses;
  // cert-manager: read tls.crt and tls.key from this directory (at every check) instead.
  std::string cert_dir;
  Duration check_interval = std::chrono::minutes(1);
  // The operator's own pod ("" outside a cluster): labelled while it leads.
  std::string pod_namespace;
  std::string pod_name;
};

inline constexpr std::string_view kWebhookLeaderLabel = "spotshift.io/webhook-leader";

inline constexpr std::string_view kWebhookPath = "/mutate-pods";

class WebhookServer {
 public:
  WebhookServer(asio::any_io_executor executor, std::shared_ptr<kube::Client> client, runtime::Timers& timers, drain::SteeringBook& book,
                runtime::Metrics& metrics, WebhookOptions options);
  ~WebhookServer();

  Result<uint16_t> listen();
  // Serves, and keeps the certificate (and caBundle) current, until stop().
  asio::awaitable<void> run();
  void stop();
  // Whether a certificate is loaded (the server answers).
  bool ready() const;
  // Labels (or unlabels) the operator's own pod as the leader the webhook Service selects.
  asio::awaitable<void> label_leader(bool leading);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spotshift::op
