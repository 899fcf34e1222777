#pragma once
// Fault injection, scriptable from C++ tests and over POST /_sim/faults. Thread-safe.

#include "core/error.hpp"

#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace spotshift::kubesim {

// One rule: which requests it hits and what happens to them.
struct FaultRule {
  std::string verb = "*";            // get, list, watch, create, update, patch, delete, or *
  std::string resource = "*";        // plural, "pods/eviction", "nodes/status", or *
  std::string name;                  // an object name, or empty for any
  std::string user_agent;            // hits only clients whose User-Agent contains this
  int status = 0;                    // answer with this code (500, 503, 429, ...)
  int retry_after_seconds = -1;      // with a Retry-After header (and details.retryAfterSeconds)
  int delay_ms = 0;                  // added latency before the answer (or a watch's first byte)
  bool reset = false;                // close the connection in the middle of the body
  int watch_drop_after_events = -1;  // watches: drop the stream after N events, no final chunk
  int watch_drop_after_ms = -1;      // watches: drop the stream after T ms, no final chunk
  int count = -1;                    // how many requests it hits; -1 is every one
  double probability = 1.0;

  static Result<FaultRule> from_json(std::string_view json);
  // Requests of verb on resource answered with status, count times (-1: every one).
  static FaultRule answer(std::string verb, std::string resource, int status, int count = -1);
};

class Faults {
 public:
  void add(FaultRule rule);
  void clear();
  // The rule hitting this request, if any (consuming one of its count).
  std::optional<FaultRule> match(std::string_view verb, std::string_view resource, std::string_view name, std::string_view user_agent = {});

  // One-shot faults.
  void expire_next_watch(std::string resource);  // the next watch on it gets an ERROR 410 event
  bool take_watch_expiry(std::string_view resource);
  void expire_next_continue();  // the next continue token gets 410
  bool take_continue_expiry();
  void conflict_next_update(std::string resource, std::string key);  // forced 409
  bool take_conflict(std::string_view resource, std::string_view key);
  // Eviction of a pod answers 429 this many more times.
  void refuse_evictions(std::string key, int times);
  bool take_eviction_refusal(std::string_view key);

  size_t rules() const;

 private:
  mutable std::mutex mutex_;
  std::vector<FaultRule> rules_;
  std::set<std::string, std::less<>> watch_expiry_;
  bool continue_expiry_ = false;
  std::set<std::string, std::less<>> conflicts_;
  std::map<std::string, int, std::less<>> eviction_refusals_;
  std::mt19937 rng_{12345};
};

}  // namespace spotshift::kubesim
