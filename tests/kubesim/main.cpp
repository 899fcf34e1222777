// kubesim: a Kubernetes API simulator that kubectl accepts.
//
//   kubesim --scenario FILE [--port N] [--port-file F] [--kubeconfig-out F] [--tls]
//           [--token-file F] [--time-scale X] [--audit-log F]
//
// It serves until SIGTERM or SIGINT and then exits 0.

#include "core/flags.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "core/time.hpp"
#include "simulator.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

using namespace spotshift;

namespace {

constexpr const char* kFooter = R"(Control endpoint (outside /api and /apis): GET /_sim/state; POST /_sim/faults, /_sim/watch/expire,
/_sim/watch/drop, /_sim/continue/expire, /_sim/conflict, /_sim/evictions/refuse, /_sim/compact,
/_sim/clock, /_sim/controllers, /_sim/nodes/NAME/conditions; DELETE /_sim/faults.
See docs/kubesim.md.
)";

// A Go duration flag ("1s", "250ms") stored in `target`.
template <class D>
FlagSet::Setter duration_setter(D* target) {
  return [target](const std::string& v) {
    auto d = parse_go_duration(v);
    if (!d) return d.error().message;
    *target = std::chrono::duration_cast<D>(*d);
    return std::string();
  };
}

Result<void> write_atomically(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return Error::config(fmt::format("cannot write {}", tmp));
    out << content;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Error::config(fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  kubesim::SimulatorOptions o;
  std::string port_file, kubeconfig_out, log_format = "text";
  int verbosity = 0;
  FlagSet flags("kubesim", "kubesim: a Kubernetes API simulator that kubectl accepts");
  flags.add_string("scenario", &o.scenario_path,
                   "Initial objects: YAML (several documents, Lists allowed) or a v1 List in JSON such as `kubectl get "
                   "nodes,pods,pdb -A -o json` (default: empty).");
  flags.add_string("address", &o.address, "Listen address.");
  flags.add_value("port", "int", "0", "Listen port; 0 picks a free one.", [&o](const std::string& v) {
    auto p = parse_int(v);
    if (!p || *p < 0 || *p > 65535) return std::string("want a number from 0 to 65535");
    o.port = static_cast<uint16_t>(*p);
    return std::string();
  });
  flags.add_string("port-file", &port_file, "Write the chosen port to this file once listening.");
  flags.add_string("kubeconfig-out", &kubeconfig_out, "Write a kubeconfig for this server to this file.");
  flags.add_bool("tls", &o.tls, "Serve HTTPS with a generated CA and serving certificate.");
  flags.add_string("tls-cert-file", &o.tls_cert_file, "Serve this certificate instead (with --tls-key-file; implies --tls).");
  flags.add_string("tls-key-file", &o.tls_key_file, "The key for --tls-cert-file.");
  flags.add_string("tls-ca-file", &o.tls_ca_file, "The CA written into kubeconfigs and used to verify client certificates.");
  flags.add_string("token-file", &o.token_file,
                   "Bearer tokens, one per line: token[,user[,uid[,\"groups\"]]]. Over TLS a request needs a valid token or "
                   "client certificate (401 otherwise); with --tls and no token file one admin token is generated.");
  flags.add_value("time-scale", "float", "1", "Simulated time runs this many times faster than real time.", [&o](const std::string& v) {
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !(x > 0)) return std::string("want a positive number");
    o.time_scale = x;
    return std::string();
  });
  flags.add_string("audit-log", &o.audit_log_path, "Append one JSON line per request to this file.");
  flags.add_value("bookmark-interval", "duration", "60s", "How often watches get a BOOKMARK.", duration_setter(&o.bookmark_interval));
  flags.add_value("history", "int", std::to_string(o.cluster.history_limit), "Changes kept for watches and consistent pagination.",
                  [&o](const std::string& v) {
                    auto n = parse_int(v);
                    if (!n || *n < 1) return std::string("want a positive number");
                    o.cluster.history_limit = static_cast<size_t>(*n);
                    return std::string();
                  });
  flags.add_value("kubelet-start-delay", "duration", "1s", "How long a bound pod takes to become Running and Ready.",
                  duration_setter(&o.cluster.kubelet_start_delay));
  flags.add_value("termination-cap", "duration", "2s", "Graceful deletion takes min(grace period, this).",
                  duration_setter(&o.cluster.termination_cap));
  flags.add_value("kill-latency", "duration", "0s", "And the pod object goes this long after that.",
                  duration_setter(&o.cluster.kill_latency));
  flags.add_checked("log-format", &log_format, "Log format: text or json.",
                    [](const std::string& v) { return log::parse_format(v) ? "" : std::string("must be text or json"); });
  flags.add_int("v", &verbosity, "Log verbosity (-v or --v).");
  flags.set_footer(kFooter);
  if (auto code = flags.parse_command(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr)) return *code;
  if (!o.tls_cert_file.empty()) o.tls = true;
  if (!o.tls_cert_file.empty() && o.tls_key_file.empty()) {
    std::fprintf(stderr, "error: --tls-cert-file needs --tls-key-file (see kubesim --help)\n");
    return 2;
  }
  log::configure(*log::parse_format(log_format), verbosity);
  log::Logger logger("kubesim");

  // Block the stop signals in every thread; main waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  kubesim::Simulator sim(o);
  if (auto r = sim.start(); !r) {
    std::fprintf(stderr, "kubesim: %s\n", r.error().message.c_str());
    return 1;
  }
  if (!kubeconfig_out.empty())
    if (auto r = write_atomically(kubeconfig_out, sim.kubeconfig()); !r) {
      std::fprintf(stderr, "kubesim: %s\n", r.error().message.c_str());
      return 1;
    }
  if (!port_file.empty())
    if (auto r = write_atomically(port_file, std::to_string(sim.port()) + "\n"); !r) {
      std::fprintf(stderr, "kubesim: %s\n", r.error().message.c_str());
      return 1;
    }
  std::printf("kubesim listening on %s (port %u)\n", sim.url().c_str(), sim.port());
  std::fflush(stdout);
  logger.info("serving", {{"url", sim.url()}, {"timeScale", o.time_scale}});

  int sig = 0;
  sigwait(&stop_signals, &sig);
  logger.info("stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  sim.stop();
  return 0;
}
