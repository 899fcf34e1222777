#pragma once
// The manager runs an operator's parts in order: metrics and probe servers; informers, then
// waits for their caches to sync (ready then); leader election (if on); once leading, the
// on_leading hooks, then the controllers. On SIGTERM or SIGINT it stops taking work, lets
// in-flight reconciles and tasks finish (within a bound), releases the lease and returns 0. If it
// loses the lease it cancels in-flight reconciles and tasks at once and returns 1: the process
// should exit.

#include "kube/client.hpp"
#include "runtime/controller.hpp"
#include "runtime/http_server.hpp"
#include "runtime/informer.hpp"
#include "runtime/leader.hpp"
#include "runtime/metrics.hpp"
#include "runtime/tasks.hpp"
#include "runtime/timers.hpp"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace spotshift::runtime {

struct ManagerOptions {
  bool leader_elect = false;
  LeaderElectionOptions leader;
  std::string metrics_address = ":8080";
  std::string probe_address = ":8081";
  Duration graceful_shutdown = std::chrono::seconds(30);
  Duration cache_sync_timeout = std::chrono::minutes(2);
  bool handle_signals = true;
};

class Manager {
 public:
  Manager(asio::any_io_executor executor, std::shared_ptr<kube::Client> client, Timers& timers, Metrics& metrics, ManagerOptions options);
  ~Manager();

  template <class T>
  void add_informer(Informer<T>& informer) {
    sources_.push_back(Source{informer.name(), [&informer] { return informer.run(); }, [&informer] { return informer.synced(); },
                              [&informer] { informer.stop(); }});
  }
  void add_controller(Controller& c) { controllers_.push_back(&c); }
  // Tasks a reconciler runs beyond its reconciles (drains): waited for on shutdown like in-flight
  // reconciles, cancelled with them when the lease is lost or the grace period ends.
  void add_tasks(Tasks& tasks) { tasks_.push_back(&tasks); }
  // Work that runs for the whole life of the manager (the event recorder).
  void add_runnable(std::string name, std::function<asio::awaitable<void>()> run, std::function<void()> stop);
  // Runs once leadership is won, before the controllers start (crash recovery).
  void on_leading(std::function<asio::awaitable<void>()> hook) { leading_hooks_.push_back(std::move(hook)); }
  // Runs as soon as the manager starts stopping (shutdown or lost lease), before it waits for
  // in-flight reconciles: long-running work is asked to wrap up here.
  void on_stopping(std::function<void()> hook) { stopping_hooks_.push_back(std::move(hook)); }

  // Returns the exit code: 0 after a requested shutdown, 1 after a failure or a lost lease.
  asio::awaitable<int> run();
  void shutdown();

  bool ready() const { return ready_; }
  bool leading() const { return leading_; }
  uint16_t metrics_port() const { return metrics_port_; }
  uint16_t probe_port() const { return probe_port_; }

 private:
  struct Source {
    std::string name;
    std::function<asio::awaitable<void>()> run;
    std::function<bool()> synced;
    std::function<void()> stop;
  };
  struct Runnable {
    std::string name;
    std::function<asio::awaitable<void>()> run;
    std::function<void()> stop;
  };
  asio::awaitable<void> lead();
  Result<void> start_servers();

  asio::any_io_executor executor_;
  std::shared_ptr<kube::Client> client_;
  Timers& timers_;
  Metrics& metrics_;
  ManagerOptions options_;
  std::vector<Source> sources_;
  std::vector<Runnable> runnables_;
  std::vector<Controller*> controllers_;
  std::vector<Tasks*> tasks_;
  std::vector<std::function<asio::awaitable<void>()>> leading_hooks_;
  std::vector<std::function<void()>> stopping_hooks_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<HttpServer> metrics_server_;
  std::unique_ptr<HttpServer> probe_server_;
  // SIGTERM and SIGINT, caught from run() on until the manager is gone (manager.cpp).
  struct SignalWatch;
  std::unique_ptr<SignalWatch> signals_;
  Signal wake_;
  bool shutdown_requested_ = false;
  bool lost_lease_ = false;
  bool ready_ = false;
  bool leading_ = false;
  int controllers_running_ = 0;
  uint16_t metrics_port_ = 0;
  uint16_t probe_port_ = 0;
};

}  // namespace spotshift::runtime
