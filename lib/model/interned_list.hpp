#pragma once
// InternedList<T, Hash>: an immutable list kept once per distinct content, like InternedString
// for strings. Lists that repeat from pod to pod (nearly every pod carries the same two default
// tolerations) then cost each pod one pointer instead of a heap block, and two lists are equal
// exactly when they are the same list, a pointer comparison.
//
// The pool is never freed (unlike the string pool): keep it to lists whose distinct values are
// few, such as those a workload's template gives all its pods. Each thread first looks in a
// small cache of its own, so the pool's mutex is taken only for a list the thread has not met
// lately.

#include <array>
#include <cstddef>
#include <initializer_list>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace spotshift::model {

// Hash: a callable size_t(const T&), consistent with T's operator==.
template <class T, class Hash>
class InternedList {
 public:
  InternedList() : p_(empty_list()) {}
  explicit InternedList(std::span<const T> items) : p_(items.empty() ? empty_list() : find_or_add(items)) {}
  InternedList(std::initializer_list<T> items) : InternedList(std::span<const T>(items.begin(), items.size())) {}

  const T* begin() const { return p_->data(); }
  const T* end() const { return p_->data() + p_->size(); }
  size_t size() const { return p_->size(); }
  bool empty() const { return p_->empty(); }
  const T& operator[](size_t i) const { return (*p_)[i]; }
  std::span<const T> span() const { return *p_; }
  // The same for equal lists, different for different ones, within one process.
  const void* id() const { return p_; }

  friend bool operator==(const InternedList& a, const InternedList& b) { return a.p_ == b.p_; }

 private:
  using List = std::vector<T>;

  static const List* empty_list() {
    static const List* e = new List;  // never destroyed: handles may outlive static destruction
    return e;
  }

  static size_t hash_of(std::span<const T> items) {
    size_t h = items.size();
    for (const T& item : items) h = (h ^ Hash()(item)) * 0x100000001b3ull + (h >> 29);
    return h;
  }

  static bool same(const List& list, std::span<const T> items) {
    if (list.size() != items.size()) return false;
    for (size_t i = 0; i < items.size(); ++i)
      if (!(list[i] == items[i])) return false;
    return true;
  }

  static const List* find_or_add(std::span<const T> items) {
    struct CacheEntry {
      size_t hash = 0;
      const List* list = nullptr;
    };
    thread_local std::array<CacheEntry, 256> cache{};
    const size_t hash = hash_of(items);
    CacheEntry& e = cache[(hash ^ (hash >> 23)) & (cache.size() - 1)];
    if (e.list && e.hash == hash && same(*e.list, items)) return e.list;
    e = {hash, pooled(items, hash)};
    return e.list;
  }

  static const List* pooled(std::span<const T> items, size_t hash) {
    struct Pool {
      std::mutex mutex;
      std::unordered_map<size_t, std::vector<const List*>> by_hash;
    };
    static Pool* pool = new Pool;  // never destroyed, as the lists it holds
    std::lock_guard lock(pool->mutex);
    auto& bucket = pool->by_hash[hash];
    for (const List* list : bucket)
      if (same(*list, items)) return list;
    bucket.push_back(new List(items.begin(), items.end()));
    return bucket.back();
  }

  const List* p_;
};

}  // namespace spotshift::model
