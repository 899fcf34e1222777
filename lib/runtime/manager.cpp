#include "runtime/manager.hpp"

#include "runtime/spawn.hpp"
#include "runtime/telemetry.hpp"

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <csignal>

namespace spotshift::runtime {

namespace {
const log::Logger logger("manager");
}

Manager::Manager(asio::any_io_executor executor, std::shared_ptr<kube::Client> client, Timers& timers, Metrics& metrics,
                 ManagerOptions options)
    : executor_(std::move(executor)),
      client_(std::move(client)),
      timers_(timers),
      metrics_(metrics),
      options_(std::move(options)),
      wake_(executor_) {}

struct Manager::SignalWatch {
  explicit SignalWatch(asio::any_io_executor executor) : set(executor, SIGINT, SIGTERM) {}
  asio::signal_set set;
};

Manager::~Manager() = default;

void Manager::add_runnable(std::string name, std::function<asio::awaitable<void>()> run, std::function<void()> stop) {
  runnables_.push_back(Runnable{std::move(name), std::move(run), std::move(stop)});
}

void Manager::shutdown() {
  shutdown_requested_ = true;
  wake_.notify();
}

Result<void> Manager::start_servers() {
  auto metrics_addr = parse_bind_address(options_.metrics_address);
  if (!metrics_addr) return metrics_addr.error().wrap("--metrics-bind-address");
  auto probe_addr = parse_bind_address(options_.probe_address);
  if (!probe_addr) return probe_addr.error().wrap("--health-probe-bind-address");
  if (!metrics_addr->disabled) {
    metrics_server_ = std::make_unique<HttpServer>(executor_, [this](std::string_view path) {
      if (path == "/metrics") return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", metrics_.render()};
      return HttpReply{404, "text/plain; charset=utf-8", "not found\n"};
    });
    auto port = metrics_server_->listen(*metrics_addr);
    if (!port) return port.error().wrap("metrics server");
    metrics_port_ = *port;
    logger.info("serving metrics", {{"address", fmt::format("{}:{}", metrics_addr->host, metrics_port_)}});
    spawn(executor_, metrics_server_->run(), "metrics server");
  }
  if (!probe_addr->disabled) {
    probe_server_ = std::make_unique<HttpServer>(executor_, [this](std::string_view path) {
      if (path == "/healthz") return HttpReply{200, "text/plain; charset=utf-8", "ok\n"};
      if (path == "/readyz") {
        if (ready_) return HttpReply{200, "text/plain; charset=utf-8", "ok\n"};
        return HttpReply{503, "text/plain; charset=utf-8", "caches are not synced yet\n"};
      }
      return HttpReply{404, "text/plain; charset=utf-8", "not found\n"};
    });
    auto port = probe_server_->listen(*probe_addr);
    if (!port) return port.error().wrap("health probe server");
    probe_port_ = *port;
    logger.info("serving health probes", {{"address", fmt::format("{}:{}", probe_addr->host, probe_port_)}});
    spawn(executor_, probe_server_->run(), "probe server");
  }
  return {};
}

asio::awaitable<void> Manager::lead() {
  leading_ = true;
  metrics_.family(telemetry::kLeader).get().set(1);
  for (auto& hook : leading_hooks_) {
    co_await hook();
    if (shutdown_requested_ || lost_lease_) co_return;
  }
  for (Controller* c : controllers_) {
    ++controllers_running_;
    spawn(
        executor_, [](Controller* c) -> asio::awaitable<void> { co_await c->run(); }(c), "controller " + c->name());
  }
  // Count controllers down as they finish.
  co_return;
}

asio::awaitable<int> Manager::run() {
  int exit_code = 0;
  if (auto r = start_servers(); !r) {
    logger.error("cannot start", {{"error", r.error()}});
    co_return 1;
  }
  if (options_.handle_signals) {
    // Caught until the manager is gone, not only while run() runs: a SIGTERM that comes while the
    // process finishes stopping (after a lost lease, while what was in flight winds down) must
    // not end it by the signal's default action, its exit status and the rest of its stop lost.
    signals_ = std::make_unique<SignalWatch>(executor_);
    signals_->set.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      logger.info("shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
      shutdown();
    });
  }
  for (auto& r : runnables_) spawn(executor_, r.run(), r.name);
  for (auto& s : sources_) spawn(executor_, s.run(), "informer " + s.name);

  // Caches first.
  Time deadline = timers_.now() + options_.cache_sync_timeout;
  auto all_synced = [&] {
    for (auto& s : sources_)
      if (!s.synced()) return false;
    return true;
  };
  while (!all_synced() && !shutdown_requested_) {
    if (timers_.now() >= deadline) {
      std::string waiting;
      for (auto& s : sources_)
        if (!s.synced()) waiting += (waiting.empty() ? "" : ", ") + s.name;
      logger.error("caches did not sync in time", {{"timeout", options_.cache_sync_timeout}, {"waiting", waiting}});
      exit_code = 1;
      shutdown_requested_ = true;
      break;
    }
    co_await wake_.wait(std::chrono::milliseconds(50));
  }
  if (!shutdown_requested_) {
    ready_ = true;
    logger.info("caches synced");
    if (options_.leader_elect) {
      elector_ = std::make_unique<LeaderElector>(client_, timers_, options_.leader);
      spawn(executor_,
            elector_->run([this] { spawn(executor_, lead(), "leading"); },
                          [this] {
                            if (!shutdown_requested_) {
                              lost_lease_ = true;
                              wake_.notify();
                            }
                          }),
            "leader election");
    } else {
      spawn(executor_, lead(), "leading");
    }
  }
  while (!shutdown_requested_ && !lost_lease_) co_await wake_.wait();
  for (auto& hook : stopping_hooks_) hook();

  if (lost_lease_) {
    // Another instance may take over soon: stop acting now, mid-reconcile or not.
    logger.error("stopping: leadership lost");
    for (Controller* c : controllers_) c->cancel();
    for (Tasks* t : tasks_) t->cancel();
    exit_code = 1;
  } else {
    // Stop taking work; let what is in flight finish, within the bound.
    for (Controller* c : controllers_) c->queue().shutdown();
    Time limit = timers_.now() + options_.graceful_shutdown;
    auto in_flight = [&] {
      size_t n = 0;
      for (Controller* c : controllers_) n += c->queue().processing();
      for (Tasks* t : tasks_) n += t->size();
      return n;
    };
    while (in_flight() > 0 && timers_.now() < limit) co_await wake_.wait(std::chrono::milliseconds(20));
    if (in_flight() > 0) {
      logger.warn("in-flight reconciles did not finish in time; cancelling them", {{"timeout", options_.graceful_shutdown}});
      for (Controller* c : controllers_) c->cancel();
      for (Tasks* t : tasks_) t->cancel();
    }
  }
  leading_ = false;
  metrics_.family(telemetry::kLeader).get().set(0);
  if (elector_) {
    elector_->stop();
    // Give the release a moment to go out.
    for (int i = 0; i < 100 && elector_->leading(); ++i) co_await wake_.wait(std::chrono::milliseconds(20));
    co_await wake_.wait(std::chrono::milliseconds(100));
  }
  for (auto& s : sources_) s.stop();
  for (auto& r : runnables_) r.stop();
  if (metrics_server_) metrics_server_->stop();
  if (probe_server_) probe_server_->stop();
  if (signals_) signals_->set.cancel();  // later signals are caught and dropped
  timers_.stop();
  co_return exit_code;
}

}  // namespace spotshift::runtime
