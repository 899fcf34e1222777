// kubesim: a Kubernetes API simulator that kubectl accepts.
//
//   kubesim --scenario FILE [--port N] [--port-file F] [--kubeconfig-out F] [--tls]
//           [--token-file F] [--time-scale X] [--audit-log F]
//
// It serves until SIGTERM or SIGINT and then exits 0.

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
#include <string>

using namespace spotshift;

namespace {

constexpr const char* kUsage = R"(kubesim: a Kubernetes API simulator that kubectl accepts

Usage:
  kubesim [--scenario FILE] [flags]

Flags:
  --scenario FILE            initial objects: YAML (several documents, Lists allowed) or a v1 List
                             in JSON such as `kubectl get nodes,pods,pdb -A -o json` (default: empty)
  --address ADDR             listen address (default 127.0.0.1)
  --port N                   listen port; 0 picks a free one (default 0)
  --port-file F              write the chosen port to F once listening
  --kubeconfig-out F         write a kubeconfig for this server to F
  --tls                      serve HTTPS with a generated CA and serving certificate
  --tls-cert-file F          serve this certificate instead (with --tls-key-file; implies --tls)
  --tls-key-file F           the key for --tls-cert-file
  --tls-ca-file F            the CA written into kubeconfigs and used to verify client certificates
  --token-file F             bearer tokens, one per line: token[,user[,uid[,"groups"]]]. Over TLS a
                             request needs a valid token or client certificate (401 otherwise);
                             with --tls and no token file one admin token is generated
  --time-scale X             simulated time runs X times faster than real time (default 1)
  --audit-log F              append one JSON line per request to F
  --bookmark-interval D      how often watches get a BOOKMARK (Go duration, default 60s)
  --history N                changes kept for watches and consistent pagination (default 100000)
  --kubelet-start-delay D    how long a bound pod takes to become Running and Ready (default 1s)
  --termination-cap D        graceful deletion takes min(grace period, D) (default 2s)
  --kill-latency D           and the pod object goes D after that (default 0s)
  --log-format text|json     log format (default text)
  -v N                       log verbosity
  -h, --help                 show this help

Control endpoint (outside /api and /apis): GET /_sim/state; POST /_sim/faults, /_sim/watch/expire,
/_sim/watch/drop, /_sim/continue/expire, /_sim/conflict, /_sim/evictions/refuse, /_sim/compact,
/_sim/clock, /_sim/controllers, /_sim/nodes/NAME/conditions; DELETE /_sim/faults.
See docs/kubesim.md.
)";

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "kubesim: %s\n", message.c_str());
  std::fprintf(stderr, "Run 'kubesim --help' for usage.\n");
  std::exit(2);
}

Duration duration_flag(const std::string& flag, const std::string& value) {
  auto d = parse_go_duration(value);
  if (!d) die(fmt::format("{}: {}", flag, d.error().message));
  return *d;
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
  std::string port_file, kubeconfig_out;
  log::Format log_format = log::Format::kText;
  int verbosity = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    auto eq = arg.find('=');
    bool has_inline = arg.starts_with("--") && eq != std::string::npos;
    if (has_inline) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto next = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= argc) die(fmt::format("flag {} needs a value", arg));
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--scenario") o.scenario_path = next();
    else if (arg == "--address") o.address = next();
    else if (arg == "--port") {
      auto p = parse_int(next());
      if (!p || *p < 0 || *p > 65535) die("--port: want a number from 0 to 65535");
      o.port = static_cast<uint16_t>(*p);
    } else if (arg == "--port-file") port_file = next();
    else if (arg == "--kubeconfig-out") kubeconfig_out = next();
    else if (arg == "--tls") o.tls = true;
    else if (arg == "--tls-cert-file") {
      o.tls_cert_file = next();
      o.tls = true;
    } else if (arg == "--tls-key-file") o.tls_key_file = next();
    else if (arg == "--tls-ca-file") o.tls_ca_file = next();
    else if (arg == "--token-file") o.token_file = next();
    else if (arg == "--time-scale") {
      std::string v = next();
      char* end = nullptr;
      double x = std::strtod(v.c_str(), &end);
      if (!end || *end || !(x > 0)) die(fmt::format("--time-scale: want a positive number, got \"{}\"", v));
      o.time_scale = x;
    } else if (arg == "--audit-log") o.audit_log_path = next();
    else if (arg == "--bookmark-interval")
      o.bookmark_interval = std::chrono::duration_cast<std::chrono::milliseconds>(duration_flag(arg, next()));
    else if (arg == "--history") {
      auto n = parse_int(next());
      if (!n || *n < 1) die("--history: want a positive number");
      o.cluster.history_limit = static_cast<size_t>(*n);
    } else if (arg == "--kubelet-start-delay") o.cluster.kubelet_start_delay = duration_flag(arg, next());
    else if (arg == "--termination-cap") o.cluster.termination_cap = duration_flag(arg, next());
    else if (arg == "--kill-latency") o.cluster.kill_latency = duration_flag(arg, next());
    else if (arg == "--log-format") {
      auto f = log::parse_format(next());
      if (!f) die(f.error().message);
      log_format = *f;
    } else if (arg == "-v" || arg == "--v") {
      auto n = parse_int(next());
      if (!n) die("-v: want a number");
      verbosity = static_cast<int>(*n);
    } else {
      die(fmt::format("unknown flag \"{}\"", argv[i]));
    }
  }
  if (!o.tls_cert_file.empty() && o.tls_key_file.empty()) die("--tls-cert-file needs --tls-key-file");
  log::configure(log_format, verbosity);
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
