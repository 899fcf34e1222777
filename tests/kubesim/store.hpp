#pragma once
// One generic object store for every resource: a global resourceVersion counter, the current
// objects by key, and a bounded history of changes. Each change keeps the previous state, so a
// paginated list can be served as a snapshot at its first page's resourceVersion and a watch can
// resume from any resourceVersion the history still covers.

#include "json_util.hpp"
#include "resources.hpp"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace spotshift::kubesim {

enum class EventType { kAdded, kModified, kDeleted };
std::string_view to_string(EventType t);

// An immutable stored version of an object: the document and its serialized form.
struct StoredObject {
  std::unique_ptr<Alloc> pool;  // doc's pool when it came from a PooledDoc (declared first: outlives doc)
  Doc doc;
  std::string json;
  std::string key;  // "ns/name" or "name"
  uint64_t rv = 0;
};
using ObjectPtr = std::shared_ptr<const StoredObject>;

struct Change {
  uint64_t rv;
  EventType type;
  const ResourceType* rt;  // the storage type
  ObjectPtr obj;           // the new state; for DELETED the last state with the deletion's rv
  ObjectPtr prev;          // the state before; null for ADDED
};

class Store {
 public:
  using Objects = std::map<std::string, ObjectPtr, std::less<>>;

  explicit Store(size_t history_limit = 100000);

  const Objects& objects(const ResourceType& rt) const;
  ObjectPtr get(const ResourceType& rt, std::string_view key) const;
  uint64_t resource_version() const { return rv_; }

  // Commits doc as the new state of its key (ADDED or MODIFIED) and stamps its resourceVersion.
  ObjectPtr put(const ResourceType& rt, Doc doc);
  ObjectPtr put(const ResourceType& rt, PooledDoc doc);
  // Removes the key (DELETED). Returns the final state, or null when absent.
  ObjectPtr erase(const ResourceType& rt, std::string_view key);

  // Watches can resume from rv when every change after rv is still in the history.
  bool can_resume(uint64_t rv) const { return rv >= compacted_; }
  uint64_t compacted_rv() const { return compacted_; }
  const std::deque<Change>& history() const { return history_; }
  // Index of the first change with a resourceVersion greater than rv.
  size_t first_after(uint64_t rv) const;
  // Forgets changes at or below rv: later watches and lists from older versions get 410.
  void compact(uint64_t rv);
  void set_history_limit(size_t n);

  // The objects of rt as they were at rv whose keys start with prefix and sort after `after`, in
  // key order. Stops after `limit` matches (0: no limit) and says whether more matches follow.
  // 410 when rv is compacted.
  Result<std::vector<ObjectPtr>> list_at(const ResourceType& rt, uint64_t rv, std::string_view prefix, std::string_view after, size_t limit,
                                         const std::function<bool(const StoredObject&)>& match, bool* more) const;

  // Listeners run synchronously after every change, in subscription order.
  using Listener = std::function<void(const Change&)>;
  void subscribe(Listener l) { listeners_.push_back(std::move(l)); }

  static std::string key_of(const ResourceType& rt, std::string_view ns, std::string_view name);

 private:
  ObjectPtr stamp(const ResourceType& rt, PooledDoc doc, uint64_t rv) const;
  void record(Change c);

  uint64_t rv_ = 0;
  uint64_t compacted_ = 0;
  size_t history_limit_;
  std::unordered_map<const ResourceType*, Objects> objects_;
  std::deque<Change> history_;
  std::vector<Listener> listeners_;
};

}  // namespace spotshift::kubesim
