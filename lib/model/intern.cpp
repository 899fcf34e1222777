#include "model/intern.hpp"

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
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  auto it = p.strings.find(s);
  if (it == p.strings.end()) {
    it = p.strings.emplace(s).first;
    p.bytes += s.size() + sizeof(std::string);
  }
  return &*it;
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
