#pragma once
// A cache of one kind of object, keyed by "namespace/name": one writer (its informer) and the
// readers on the same thread (reconcilers, the evictor, the planner's input).
//
// Objects live in a fixed number of hashed shards, each a sorted map: a write touches one small
// map, and a walk over every object visits the shards in a fixed order. A reader that takes
// every object on each reconcile (the planner) reads values(), one vector rebuilt only after a
// write.

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spotshift::runtime {

template <class T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;
  using KeyFn = std::function<std::string(const T&)>;
  static constexpr size_t kShards = 512;

  explicit Store(KeyFn key) : key_(std::move(key)) {}

  // upsert returns the previous object (null when new); erase the removed one.
  Ptr upsert(Ptr obj) {
    std::string key = key_(*obj);
    auto& shard = shard_of(key);
    Ptr prev;
    auto it = shard.find(key);
    if (it != shard.end()) {
      prev = it->second;
      it->second = obj;
    } else {
      shard.emplace(std::move(key), obj);
      ++size_;
    }
    ++version_;
    return prev;
  }
  Ptr erase(std::string_view key) {
    auto& shard = shard_of(key);
    auto it = shard.find(key);
    if (it == shard.end()) return nullptr;
    Ptr prev = it->second;
    shard.erase(it);
    --size_;
    ++version_;
    return prev;
  }

  Ptr get(std::string_view key) const {
    const auto& shard = shards_[shard_index(key)];
    auto it = shard.find(key);
    return it == shard.end() ? nullptr : it->second;
  }
  size_t size() const { return size_; }
  // Counts writes: a reader that kept something derived from the store compares it.
  uint64_t version() const { return version_; }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& shard : shards_)
      for (const auto& [k, p] : shard) f(p);
  }
  // Every object as one vector, rebuilt only after a write: for a reader that takes the whole
  // store on every reconcile (the planner's input), a walk over a contiguous vector instead of
  // the shards' trees, which are cold in the cache by then.
  const std::vector<Ptr>& values() const {
    if (values_version_ != version_) {
      values_.clear();
      values_.reserve(size_);
      for_each([&](const Ptr& p) { values_.push_back(p); });
      values_version_ = version_;
    }
    return values_;
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& shard : shards_)
      for (const auto& [k, p] : shard) out.push_back(k);
    return out;
  }

 private:
  using Shard = std::map<std::string, Ptr, std::less<>>;
  static size_t shard_index(std::string_view key) { return std::hash<std::string_view>{}(key) % kShards; }
  Shard& shard_of(std::string_view key) { return shards_[shard_index(key)]; }

  KeyFn key_;
  std::array<Shard, kShards> shards_;
  size_t size_ = 0;
  uint64_t version_ = 0;
  mutable std::vector<Ptr> values_;
  mutable uint64_t values_version_ = UINT64_MAX;
};

}  // namespace spotshift::runtime
