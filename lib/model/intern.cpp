#include "model/intern.hpp"

#include <array>
#include <mutex>
#include <unordered_set>

namespace spotshift::model {

namespace {

struct Hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>()(s); }
};
struct Eq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const noexcept { return a == b; }
};

struct Pool {
  std::mutex mutex;
  std::unordered_set<std::string, Hash, Eq> strings;
  size_t bytes = 0;
};

Pool& pool() {
  // Never destroyed: handles may outlive static destruction order.
  static Pool* p = new Pool;
  return *p;
}

const std::string* intern(std::string_view s) {
  // A per-thread direct-mapped cache in front of the locked pool: most strings a decoder meets
  // (namespaces, label keys, owner kinds, toleration keys) repeat from one object to the next.
  // Pooled strings are never freed, so a cached pointer stays valid.
  thread_local std::array<const std::string*, 4096> cache{};
  const std::string*& slot = cache[Hash()(s) & (cache.size() - 1)];
  if (slot && *slot == s) return slot;
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  auto it = p.strings.find(s);
  if (it == p.strings.end()) {
    it = p.strings.emplace(s).first;
    p.bytes += s.size() + sizeof(std::string);
  }
  slot = &*it;
  return slot;
}

const std::string* empty_string() {
  static const std::string* e = intern("");
  return e;
}

}  // namespace

InternedString::InternedString() : p_(empty_string()) {}
InternedString::InternedString(std::string_view s) : p_(s.empty() ? empty_string() : intern(s)) {}

InternStats intern_stats() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  return InternStats{p.strings.size(), p.bytes};
}

}  // namespace spotshift::model
