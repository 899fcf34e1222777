#pragma once
// Records events.k8s.io/v1 Events without ever blocking the caller: record() queues, run() sends.
//
// Like client-go's tools/events: an event identical in type, action, reason, reporting
// controller and instance, regarding and related object to a recent one becomes a series
// (series.count 2 is sent at once, later counts are flushed periodically, and a series ends after
// 6 minutes without observations). A token bucket per object and type (burst 25, one more every
// 5 minutes) drops spam, and a full queue drops rather than waits.

#include "kube/client.hpp"
#include "runtime/timers.hpp"

#include <deque>
#include <map>
#include <optional>
#include <string>

namespace spotshift::runtime {

struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;
};

enum class EventType { kNormal, kWarning };
std::string_view to_string(EventType t);

// An event's reason (UpperCamelCase), the action it reports and its type, declared once where
// its subsystem declares its telemetry (operator/telemetry.hpp).
struct EventReason {
  std::string_view reason;
  std::string_view action;
  EventType type = EventType::kNormal;
};

struct EventRecorderOptions {
  std::string reporting_controller = "spotshift.io/rescheduler";
  // The API server refuses an event without one; the operator sets its leader-election identity.
  std::string reporting_instance = "spotshift";
  size_t queue_size = 1000;
  Duration series_flush_interval = std::chrono::minutes(30);
  Duration series_idle = std::chrono::minutes(6);
  int spam_burst = 25;
  Duration spam_refill = std::chrono::minutes(5);
  int send_attempts = 3;
};

struct EventRecorderStats {
  uint64_t recorded = 0;
  uint64_t created = 0;
  uint64_t series_updates = 0;
  uint64_t dropped_spam = 0;
  uint64_t dropped_full = 0;
  uint64_t failed = 0;
};

class EventRecorder {
 public:
  EventRecorder(std::shared_ptr<kube::Client> client, Timers& timers, EventRecorderOptions options);

  // note is one sentence (cut at 1 KiB).
  void record(const ObjectReference& regarding, const EventReason& why, std::string note,
              const std::optional<ObjectReference>& related = {});

  // Sends queued events until stop(), then flushes what is pending.
  asio::awaitable<void> run();
  void stop();
  const EventRecorderStats& stats() const { return stats_; }

 private:
  struct Pending {
    ObjectReference regarding;
    std::optional<ObjectReference> related;
    std::string type, reason, action, note;
    Time at;
  };
  struct Series {
    std::string name;
    std::string namespace_;
    int count = 1;
    Time last{};
    bool created = false;
    bool dirty = false;
  };
  struct Bucket {
    double tokens;
    Time last;
  };

  asio::awaitable<void> send(const Pending& p);
  asio::awaitable<void> flush_series();
  static std::string series_key(const Pending& p, const EventRecorderOptions& o);

  std::shared_ptr<kube::Client> client_;
  Timers& timers_;
  EventRecorderOptions options_;
  std::deque<Pending> queue_;
  std::map<std::string, Series> series_;
  std::map<std::string, Bucket> spam_;
  Signal wake_;
  bool stopped_ = false;
  EventRecorderStats stats_;
};

}  // namespace spotshift::runtime
