// A tiny operator for the leader-election test: while it leads, it "acts" by patching an
// annotation on one node every 200 ms. Usage: leader_demo KUBECONFIG IDENTITY NODE

#include "core/log.hpp"
#include "kube/client.hpp"
#include "leader_manager.hpp"
#include "runtime/informer.hpp"
#include "runtime/manager.hpp"

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>

#include <cstdio>

using namespace spotshift;
using namespace spotshift::runtime;

namespace {
class Actor final : public Reconciler {
 public:
  Actor(std::shared_ptr<kube::Client> client, std::string identity) : client_(std::move(client)), identity_(std::move(identity)) {}
  asio::awaitable<Result<Action>> reconcile(const std::string& key) override {
    std::string patch = fmt::format(R"({{"metadata":{{"annotations":{{"spotshift.io/actor":"{}-{}"}}}}}})", identity_, ++count_);
    auto r = co_await client_->patch(kube::Resource::nodes(), "", key, kube::PatchType::kMerge, patch);
    if (!r) co_return r.error();
    co_return Action::requeue_after(std::chrono::milliseconds(200));
  }

 private:
  std::shared_ptr<kube::Client> client_;
  std::string identity_;
  int count_ = 0;
};
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: leader_demo KUBECONFIG IDENTITY NODE\n");
    return 2;
  }
  log::configure(log::Format::kText, 0);
  auto config = kube::kubeconfig_config({argv[1]});
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().message.c_str());
    return 1;
  }
  boost::asio::io_context ioc;
  kube::ClientOptions co;
  co.user_agent = fmt::format("leader-demo/{}", argv[2]);
  auto client = kube::Client::create(ioc.get_executor(), *config, co);
  if (!client) return 1;
  Timers timers(ioc.get_executor(), SystemClock::instance());
  Metrics metrics;
  ManagerOptions mo = runtime::testing::leader_elected("leader-demo", argv[2], "0");
  Manager manager(ioc.get_executor(), *client, timers, metrics, mo);
  Informer<model::Node>::Options io;
  io.field_selector = std::string("metadata.name=") + argv[3];
  Informer<model::Node> nodes("nodes", *client, timers, io);
  manager.add_informer(nodes);
  Actor actor(*client, argv[2]);
  WorkQueue queue(timers);
  Controller controller("actor", actor, queue, timers, {});
  nodes.on_event([&](const ObjectEvent<model::Node>& e) {
    if (e.type == ObjectEvent<model::Node>::Type::kAdded) queue.add(e.object->meta.key());
  });
  manager.add_controller(controller);
  int code = 0;
  boost::asio::co_spawn(
      ioc, [&]() -> boost::asio::awaitable<void> { code = co_await manager.run(); },
      [&](std::exception_ptr e) {
        log_exception("manager", e);
        ioc.stop();
      });
  ioc.run();
  return code;
}
