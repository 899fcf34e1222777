#pragma once
// A reflector and informer for one kind: list, then watch from the list's resourceVersion,
// applying events to a Store and telling handlers. It relists on 410 (first from the last
// resourceVersion it saw, then from scratch), backs off on errors (800 ms doubling to 30 s, full
// jitter, reset after two healthy minutes), follows bookmarks, and re-delivers every object on an
// optional resync period. Objects that do not decode are logged and skipped.
//
// States: Listing -> Watching -> (clean end) Watching | (410) Relisting | (error) Backoff.

#include "core/backoff.hpp"
#include "core/log.hpp"
#include "kube/client.hpp"
#include "runtime/spawn.hpp"
#include "runtime/store.hpp"
#include "runtime/timers.hpp"

#include <fmt/format.h>

#include <functional>
#include <random>
#include <set>

namespace spotshift::runtime {

template <class T>
struct ObjectEvent {
  enum class Type { kAdded, kUpdated, kDeleted };
  Type type;
  std::shared_ptr<const T> object;  // the new state, or the last one for kDeleted
  std::shared_ptr<const T> old;     // kUpdated: the state before
  bool resync = false;              // a periodic re-delivery, not a change
};

// Whether an update changed anything the operator reads: a different resourceVersion with the
// same content (heartbeats, status timestamps) is not a change.
template <class T>
bool content_changed(const ObjectEvent<T>& e) {
  if (e.type != ObjectEvent<T>::Type::kUpdated || !e.old) return true;
  if (e.resync) return true;
  if (e.old->meta.resource_version == e.object->meta.resource_version) return false;
  if constexpr (requires(const T& a, const T& b) { a.same_content(b); }) return !e.object->same_content(*e.old);
  return true;
}

struct InformerStats {
  uint64_t lists = 0;
  uint64_t watches = 0;
  uint64_t events = 0;
  uint64_t relists_after_expiry = 0;
  uint64_t errors = 0;
  uint64_t decode_errors = 0;
};

template <class T>
class Informer {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Handler = std::function<void(const ObjectEvent<T>&)>;

  struct Options {
    std::string namespace_;  // empty: all namespaces
    std::string label_selector;
    std::string field_selector;
    int64_t page_size = 500;
    Duration resync_period{0};  // 0: no resync
    Backoff::Options backoff{};
    int min_watch_timeout_seconds = 300;
    int max_watch_timeout_seconds = 600;
    std::function<void(T&)> transform;  // trims objects before they are stored
  };

  Informer(std::string name, std::shared_ptr<kube::Client> client, Timers& timers, Options options)
      : name_(std::move(name)),
        client_(std::move(client)),
        timers_(timers),
        options_(std::move(options)),
        store_([](const T& o) { return o.meta.key(); }),
        backoff_(options_.backoff),
        synced_signal_(timers.executor()),
        logger_("informer." + name_) {}

  Store<T>& store() { return store_; }
  const std::string& name() const { return name_; }
  void on_event(Handler h) { handlers_.push_back(std::move(h)); }
  bool synced() const { return synced_; }
  const InformerStats& stats() const { return stats_; }
  const std::string& resource_version() const { return rv_; }

  // Waits until the first list has been applied, or the timeout passes.
  asio::awaitable<bool> wait_synced(Duration timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!synced_ && !stopped_ && std::chrono::steady_clock::now() < deadline)
      co_await synced_signal_.wait(deadline - std::chrono::steady_clock::now());
    co_return synced_;
  }

  void stop() {
    stopped_ = true;
    if (watch_) watch_->close();
    synced_signal_.notify();
  }

  asio::awaitable<void> run() {
    if (options_.resync_period > Duration::zero()) spawn(timers_.executor(), resync_loop(), "resync of " + name_);
    enum class State { kListing, kWatching, kBackoff } state = State::kListing;
    std::string relist_from;  // after a 410: first try the last resourceVersion seen
    while (!stopped_) {
      switch (state) {
        case State::kListing: {
          auto r = co_await list(relist_from);
          if (stopped_) co_return;
          if (!r) {
            if (r.error().is_expired() && !relist_from.empty()) {
              relist_from.clear();  // that version is gone too: list the most recent state
              continue;
            }
            fail("list", r.error());
            state = State::kBackoff;
            continue;
          }
          relist_from.clear();
          state = State::kWatching;
          break;
        }
        case State::kWatching: {
          auto r = co_await watch();
          if (stopped_) co_return;
          if (!r) {
            if (r.error().is_expired()) {
              ++stats_.relists_after_expiry;
              logger_.info("watch expired: relisting", {{"resourceVersion", rv_}});
              relist_from = rv_;
              state = State::kListing;
              continue;
            }
            fail("watch", r.error());
            state = State::kBackoff;
          }
          // A clean end (the server's timeout) just starts the next watch.
          break;
        }
        case State::kBackoff: {
          Duration d = backoff_.next(timers_.now());
          logger_.debug(1, "backing off", {{"delay", d}});
          if (!co_await timers_.sleep(d)) co_return;
          state = rv_.empty() ? State::kListing : State::kWatching;
          break;
        }
      }
    }
  }

 private:
  void fail(std::string_view what, const Error& e) {
    ++stats_.errors;
    logger_.warn(fmt::format("{} failed", what), {{"error", e}});
  }

  // An object as the store keeps it: trimmed by the transform, then shared and immutable.
  Ptr keep(std::shared_ptr<T> obj) {
    if (options_.transform) options_.transform(*obj);
    return obj;
  }

  void skip_undecodable(const Error& e) {
    ++stats_.decode_errors;
    logger_.warn("skipping an object that does not decode", {{"error", e}});
  }

  void deliver(const ObjectEvent<T>& e) {
    for (const auto& h : handlers_) h(e);
  }

  asio::awaitable<Result<void>> list(const std::string& from_rv) {
    kube::ListOptions o;
    o.label_selector = options_.label_selector;
    o.field_selector = options_.field_selector;
    if (from_rv.empty()) {
      o.limit = options_.page_size;
      o.resource_version = rv_.empty() ? "0" : "";  // the first list may come from a cache
    } else {
      o.limit = 0;  // as client-go does when relisting from a version
      o.resource_version = from_rv;
    }
    ++stats_.lists;
    // Each object is decoded straight into the shared object the store keeps; none is applied
    // before the whole list has read (a list that fails part-way is dropped, list_each's rule).
    std::vector<Ptr> listed;
    std::vector<Error> skipped;
    auto rv = co_await client_->list_each(kube::ResourceTraits<T>::resource(), options_.namespace_, o, [&](model::JsonReader& item) {
      auto obj = std::make_shared<T>();
      if (auto decoded = kube::read_object_into<T>(item, *obj); !decoded) {
        skipped.push_back(decoded.error());
        return;
      }
      listed.push_back(keep(std::move(obj)));
    });
    if (!rv) co_return rv.error();
    for (const auto& e : skipped) skip_undecodable(e);
    // Replace: upsert everything listed, then delete what vanished, telling handlers.
    std::set<std::string> seen;
    for (Ptr& fresh : listed) {
      std::string key = fresh->meta.key();
      seen.insert(key);
      Ptr prev = store_.upsert(fresh);
      if (!prev) deliver({ObjectEvent<T>::Type::kAdded, fresh, nullptr, false});
      else if (prev->meta.resource_version != fresh->meta.resource_version) deliver({ObjectEvent<T>::Type::kUpdated, fresh, prev, false});
    }
    for (const auto& key : store_.keys()) {
      if (seen.count(key)) continue;
      if (Ptr gone = store_.erase(key)) deliver({ObjectEvent<T>::Type::kDeleted, gone, nullptr, false});
    }
    rv_ = std::move(*rv);
    if (!synced_) {
      synced_ = true;
      synced_signal_.notify();
      logger_.info("synced", {{"objects", static_cast<int64_t>(store_.size())}, {"resourceVersion", rv_}});
    }
    co_return Result<void>{};
  }

  asio::awaitable<Result<void>> watch() {
    kube::WatchOptions o;
    o.label_selector = options_.label_selector;
    o.field_selector = options_.field_selector;
    o.resource_version = rv_;
    o.allow_bookmarks = true;
    o.timeout_seconds = std::uniform_int_distribution<int>(options_.min_watch_timeout_seconds, options_.max_watch_timeout_seconds)(rng_);
    ++stats_.watches;
    auto w = co_await client_->watch<T>(options_.namespace_, o);
    if (!w) co_return w.error();
    watch_ = &*w;
    struct Clear {
      kube::Watch<T>*& w;
      ~Clear() { w = nullptr; }
    } clear{watch_};
    for (;;) {
      auto e = co_await w->next();
      if (stopped_) co_return Result<void>{};
      if (!e) co_return e.error();
      if (!*e) co_return Result<void>{};  // the server ended it: watch again from rv_
      const auto& ev = **e;
      ++stats_.events;
      if (!ev.resource_version.empty()) rv_ = ev.resource_version;
      if (ev.type == kube::WatchEventType::kBookmark) continue;
      if (ev.decode_error) {
        skip_undecodable(*ev.decode_error);
        continue;
      }
      Ptr fresh = keep(std::make_shared<T>(std::move(*(*e)->object)));
      if (ev.type == kube::WatchEventType::kDeleted) {
        if (Ptr gone = store_.erase(fresh->meta.key())) deliver({ObjectEvent<T>::Type::kDeleted, fresh, gone, false});
      } else {
        Ptr prev = store_.upsert(fresh);
        deliver({prev ? ObjectEvent<T>::Type::kUpdated : ObjectEvent<T>::Type::kAdded, fresh, prev, false});
      }
    }
  }

  asio::awaitable<void> resync_loop() {
    while (!stopped_) {
      if (!co_await timers_.sleep(options_.resync_period)) co_return;
      if (!synced_) continue;
      store_.for_each([&](const Ptr& p) { deliver({ObjectEvent<T>::Type::kUpdated, p, p, true}); });
    }
  }

  std::string name_;
  std::shared_ptr<kube::Client> client_;
  Timers& timers_;
  Options options_;
  Store<T> store_;
  Backoff backoff_;
  Signal synced_signal_;
  log::Logger logger_;
  std::vector<Handler> handlers_;
  std::string rv_;
  bool synced_ = false;
  bool stopped_ = false;
  kube::Watch<T>* watch_ = nullptr;
  InformerStats stats_;
  std::mt19937 rng_{std::random_device{}()};
};

}  // namespace spotshift::runtime
