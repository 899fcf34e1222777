#pragma once
// Interned strings: label keys and values, namespaces, node names and owner names repeat across
// 150,000 cached pods, so each distinct string is stored once and a pod holds an 8-byte handle.

#include <compare>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace spotshift::model {

class InternedString {
 public:
  InternedString();  // the empty string
  explicit InternedString(std::string_view s);

  std::string_view view() const { return *p_; }
  const std::string& str() const { return *p_; }
  bool empty() const { return p_->empty(); }
  size_t size() const { return p_->size(); }
  const void* id() const { return p_; }

  // Identity is pointer identity: one pool, one copy of each string.
  friend bool operator==(InternedString a, InternedString b) { return a.p_ == b.p_; }
  friend bool operator==(InternedString a, std::string_view b) { return a.view() == b; }
  // Ordering is by content so sorted output never depends on addresses.
  friend std::strong_ordering operator<=>(InternedString a, InternedString b) {
    if (a.p_ == b.p_) return std::strong_ordering::equal;
    return a.view().compare(b.view()) <=> 0;
  }

 private:
  const std::string* p_;
};

// s interned, compared first with `last`, what the same field held in the object decoded before
// it (which `last` then holds): a list comes sorted by namespace and name, so neighbours are
// mostly replicas of one workload with the same namespace, labels, owner and tolerations, and a
// match costs one comparison instead of hashing the string.
inline InternedString intern_as_before(std::string_view s, InternedString& last) {
  if (s != last.view()) last = InternedString(s);
  return last;
}

// Number of distinct strings in the pool and their total bytes (for the memory benchmark).
struct InternStats {
  size_t strings;
  size_t bytes;
};
InternStats intern_stats();

}  // namespace spotshift::model

template <>
struct std::hash<spotshift::model::InternedString> {
  size_t operator()(spotshift::model::InternedString s) const noexcept {
    return std::hash<const void*>()(s.id());
  }
};
