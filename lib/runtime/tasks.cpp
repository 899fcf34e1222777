#include "runtime/tasks.hpp"

#include "runtime/spawn.hpp"

#include <boost/asio/post.hpp>

namespace spotshift::runtime {

bool Tasks::start(const std::string& key, boost::asio::awaitable<void> work, std::function<void()> done) {
  if (running(key)) return false;
  auto signal = std::make_shared<boost::asio::cancellation_signal>();
  running_.emplace(key, signal);
  spawn(executor_, std::move(work), "task " + key, *signal, [this, key, signal, done = std::move(done)] {
    if (auto it = running_.find(key); it != running_.end() && it->second == signal) running_.erase(it);
    // The signal goes once this handler has returned (its slot belongs to it).
    boost::asio::post(executor_, [signal] {});
    if (done) done();
  });
  return true;
}

void Tasks::cancel() {
  // A copy: a task may end, and leave the map, inside emit.
  auto signals = running_;
  for (auto& [key, signal] : signals) signal->emit(boost::asio::cancellation_type::terminal);
}

}  // namespace spotshift::runtime
