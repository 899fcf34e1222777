#pragma once
// Long-running work a reconciler owns, one task per key (a policy's drain): a reconcile starts
// it and returns, later reconciles observe it and ask it to stop, and the task's end enqueues the
// key again, in the controller-runtime style. Each task is a coroutine with its own cancellation
// signal. The manager waits for the tasks when shutting down (after its stopping hooks asked them
// to wrap up) and cancels them when leadership is lost.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace spotshift::runtime {

class Tasks {
 public:
  explicit Tasks(boost::asio::any_io_executor executor) : executor_(std::move(executor)) {}
  Tasks(const Tasks&) = delete;
  Tasks& operator=(const Tasks&) = delete;

  // Starts `work` under `key`; false (and nothing started) if a task of that key is running.
  // `done` runs once the task has ended, however it ended (returned, threw, or was cancelled);
  // running(key) is false by then.
  bool start(const std::string& key, boost::asio::awaitable<void> work, std::function<void()> done = {});
  bool running(const std::string& key) const { return running_.count(key) > 0; }
  size_t size() const { return running_.size(); }
  // Terminal cancellation of every running task: their I/O ends with operation_aborted.
  void cancel();

 private:
  boost::asio::any_io_executor executor_;
  std::map<std::string, std::shared_ptr<boost::asio::cancellation_signal>> running_;
};

}  // namespace spotshift::runtime
