#pragma once
// One watch: renders the initial synthetic ADDED events, then the store's changes that match its
// namespace and selectors, as newline-delimited JSON events. Objects entering the selector show
// up as ADDED and leaving it as DELETED, and a cursor that falls out of the kept history ends the
// stream with an ERROR 410 event, as a real apiserver does.

#include "cluster.hpp"

#include "model/selector.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace spotshift::kubesim {

struct WatchSpec {
  const ResourceType* rt = nullptr;  // the served type (events.k8s.io is a view of core events)
  std::string ns;                    // empty: every namespace
  std::optional<model::LabelSelector> labels;
  std::optional<model::FieldSelector> fields;
  bool initial = false;  // synthetic ADDED events for the current state first
  uint64_t from_rv = 0;  // otherwise: changes after this resourceVersion
  bool bookmarks = false;
  bool initial_events_end = false;  // sendInitialEvents: a bookmark marks the end of the initial events
  bool table = false;
  std::chrono::seconds timeout{1800};
  bool expire_now = false;  // fault: answer with ERROR 410 at once
};

class WatchStream {
 public:
  WatchStream(Cluster& cluster, WatchSpec spec);

  // Events ready to send now (possibly several lines), or empty when nothing is pending.
  std::string poll();
  // Pending events, then a BOOKMARK at the resourceVersion they reach (when bookmarks are on).
  std::string bookmark();
  // The stream sent its ERROR event and must close.
  bool finished() const { return finished_; }
  const WatchSpec& spec() const { return spec_; }
  size_t events_sent() const { return sent_; }

 private:
  bool matches(const StoredObject& obj) const;
  void append(std::string& out, std::string_view type, const StoredObject& obj);
  std::string render(const StoredObject& obj) const;

  Cluster& cluster_;
  WatchSpec spec_;
  uint64_t cursor_;
  bool started_ = false;
  bool finished_ = false;
  size_t sent_ = 0;
};

// Field values for field selectors, read from the object by path ("spec.nodeName").
std::optional<std::string> field_value(const Value& obj, std::string_view field);

}  // namespace spotshift::kubesim
