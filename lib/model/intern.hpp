#pragma once
// Interned strings: label keys and values, namespaces, node names and owner names repeat across
// 150,000 cached pods, so each distinct string is stored once and a pod holds an 8-byte handle.
// Handles are counted: a string is freed with the last object that holds it.

#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace spotshift::model {

namespace detail {
// One pooled string and the number of handles to it. The text never changes; the entry is freed
// when its last handle goes (lib/model/intern.cpp), so a string no cached object holds any more
// (a finished Job's uid) does not stay for the life of the process.
struct InternEntry {
  std::string text;
  size_t hash = 0;
  mutable std::atomic<uint32_t> refs{0};
};
// The empty string: never counted, never freed.
extern const InternEntry kEmptyInternEntry;
// Drops what may be the last reference, under the pool's lock; frees the entry if it was.
void release_interned(const InternEntry* e) noexcept;
struct InternAccess;  // lib/model/intern.cpp: makes handles for the pool's entries
}  // namespace detail

class InternedString {
 public:
  constexpr InternedString() noexcept : p_(&detail::kEmptyInternEntry) {}
  explicit InternedString(std::string_view s);
  // A handle is a counted reference: a copy counts once more (one atomic increment), a move
  // takes the reference over. Pass handles by const reference in loops that run per pod.
  InternedString(const InternedString& o) noexcept : p_(o.p_) { acquire(); }
  InternedString(InternedString&& o) noexcept : p_(std::exchange(o.p_, &detail::kEmptyInternEntry)) {}
  InternedString& operator=(const InternedString& o) noexcept {
    if (p_ != o.p_) {
      o.acquire();
      release();
      p_ = o.p_;
    }
    return *this;
  }
  InternedString& operator=(InternedString&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, &detail::kEmptyInternEntry);
    }
    return *this;
  }
  ~InternedString() { release(); }

  std::string_view view() const { return p_->text; }
  const std::string& str() const { return p_->text; }
  bool empty() const { return p_->text.empty(); }
  size_t size() const { return p_->text.size(); }
  // The same for equal strings while a handle to them lives (an address may be reused after the
  // last one goes: keep a handle wherever an id is kept).
  const void* id() const { return p_; }

  // Identity is pointer identity: one pool, one copy of each string.
  friend bool operator==(const InternedString& a, const InternedString& b) { return a.p_ == b.p_; }
  friend bool operator==(const InternedString& a, std::string_view b) { return a.view() == b; }
  // Ordering is by content so sorted output never depends on addresses.
  friend std::strong_ordering operator<=>(const InternedString& a, const InternedString& b) {
    if (a.p_ == b.p_) return std::strong_ordering::equal;
    return a.view().compare(b.view()) <=> 0;
  }

 private:
  friend struct detail::InternAccess;
  struct Adopt {};
  InternedString(Adopt, const detail::InternEntry* e) noexcept : p_(e) {}

  void acquire() const noexcept {
    if (p_ != &detail::kEmptyInternEntry) p_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void release() noexcept {
    if (p_ == &detail::kEmptyInternEntry) return;
    // Not the last reference: a plain decrement. Perhaps the last: under the pool's lock, where
    // a lookup cannot hand the entry out again at the same time.
    uint32_t n = p_->refs.load(std::memory_order_relaxed);
    while (n > 1)
      if (p_->refs.compare_exchange_weak(n, n - 1, std::memory_order_release, std::memory_order_relaxed)) return;
    detail::release_interned(p_);
  }

  const detail::InternEntry* p_;
};

// s interned, compared first with `last`, what the same field held in the object decoded before
// it (which `last` then holds): a list comes sorted by namespace and name, so neighbours are
// mostly replicas of one workload with the same namespace, labels, owner and tolerations, and a
// match costs one comparison instead of hashing the string.
inline InternedString intern_as_before(std::string_view s, InternedString& last) {
  if (s != last.view()) last = InternedString(s);
  return last;
}

// Number of distinct strings in the pool and their total bytes (the memory benchmark, metrics).
struct InternStats {
  size_t strings;
  size_t bytes;
};
InternStats intern_stats();

}  // namespace spotshift::model

template <>
struct std::hash<spotshift::model::InternedString> {
  size_t operator()(const spotshift::model::InternedString& s) const noexcept { return std::hash<const void*>()(s.id()); }
};
