#pragma once
// A cache of one kind of object: one writer (its informer), many readers.
//
// Objects live in copy-on-write shards. snapshot() freezes the current shards into an immutable
// Snapshot by copying a few hundred pointers; the writer then copies a shard only the first time
// it changes it after a snapshot. So a reconciler can take a consistent view of 150,000 pods per
// reconcile without copying them, and a planner can use that view on another thread.
//
// Indexes map a value (a node name, an owner UID, a namespace, a label) to the objects with it.
// Their buckets are copy-on-write too: a bucket pointer that did not change between two snapshots
// means none of its objects changed, which lets readers reuse work.

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spotshift::runtime {

namespace detail {

template <class V, size_t N>
class CowShards {
 public:
  using Shard = std::map<std::string, V, std::less<>>;
  using Frozen = std::array<std::shared_ptr<const Shard>, N>;

  CowShards() {
    for (auto& s : shards_) s = std::make_shared<Shard>();
  }
  static size_t shard_of(std::string_view key) { return std::hash<std::string_view>{}(key) % N; }
  const V* find(std::string_view key) const {
    const Shard& s = *shards_[shard_of(key)];
    auto it = s.find(key);
    return it == s.end() ? nullptr : &it->second;
  }
  // The shard holding key, copied first if a snapshot shares it.
  Shard& edit(std::string_view key) {
    auto& p = shards_[shard_of(key)];
    if (p.use_count() > 1) p = std::make_shared<Shard>(*p);
    return *p;
  }
  Frozen freeze() const {
    Frozen f;
    for (size_t i = 0; i < N; ++i) f[i] = shards_[i];
    return f;
  }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& s : shards_)
      for (const auto& [k, v] : *s) f(k, v);
  }

 private:
  std::array<std::shared_ptr<Shard>, N> shards_;
};

}  // namespace detail

template <class T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Bucket = std::shared_ptr<const std::vector<Ptr>>;  // sorted by key
  using KeyFn = std::function<std::string(const T&)>;
  using IndexFn = std::function<void(const T&, std::vector<std::string>& values)>;
  static constexpr size_t kShards = 512;
  static constexpr size_t kIndexShards = 128;

 private:
  using Objects = detail::CowShards<Ptr, kShards>;
  using IndexShards = detail::CowShards<Bucket, kIndexShards>;

 public:
  // An immutable, consistent view. Cheap to take; safe to read from any thread.
  class Snapshot {
   public:
    Ptr get(std::string_view key) const {
      const auto& shard = *objects_[Objects::shard_of(key)];
      auto it = shard.find(key);
      return it == shard.end() ? nullptr : it->second;
    }
    size_t size() const { return size_; }
    uint64_t version() const { return version_; }
    template <class F>
    void for_each(F&& f) const {
      for (const auto& shard : objects_)
        for (const auto& [k, p] : *shard) f(p);
    }
    // The objects with this index value (sorted by key); never null.
    Bucket index(std::string_view name, std::string_view value) const {
      static const Bucket kEmpty = std::make_shared<const std::vector<Ptr>>();
      auto it = indexes_.find(name);
      if (it == indexes_.end()) return kEmpty;
      const auto& shard = *it->second[IndexShards::shard_of(value)];
      auto b = shard.find(value);
      return b == shard.end() ? kEmpty : b->second;
    }
    template <class F>
    void for_each_value(std::string_view name, F&& f) const {
      auto it = indexes_.find(name);
      if (it == indexes_.end()) return;
      for (const auto& shard : it->second)
        for (const auto& [value, bucket] : *shard) f(value, bucket);
    }

   private:
    friend class Store;
    typename Objects::Frozen objects_;
    std::map<std::string, typename IndexShards::Frozen, std::less<>> indexes_;
    size_t size_ = 0;
    uint64_t version_ = 0;
  };
  using SnapshotPtr = std::shared_ptr<const Snapshot>;

  explicit Store(KeyFn key) : key_(std::move(key)) {}

  // Indexes are declared before the first write.
  void add_index(std::string name, IndexFn fn) { indexes_.push_back(Index{std::move(name), std::move(fn), {}}); }

  // Writer API. upsert returns the previous object (null when new); erase the removed one.
  Ptr upsert(Ptr obj) {
    std::string key = key_(*obj);
    auto& shard = objects_.edit(key);
    Ptr prev;
    auto it = shard.find(key);
    if (it != shard.end()) {
      prev = it->second;
      it->second = obj;
    } else {
      shard.emplace(key, obj);
      ++size_;
    }
    reindex(key, prev.get(), obj);
    touch();
    return prev;
  }
  Ptr erase(std::string_view key) {
    auto& shard = objects_.edit(key);
    auto it = shard.find(key);
    if (it == shard.end()) return nullptr;
    Ptr prev = it->second;
    shard.erase(it);
    --size_;
    reindex(std::string(key), prev.get(), nullptr);
    touch();
    return prev;
  }

  // Reader API on the writer's thread: the latest state, no snapshot needed.
  Ptr get(std::string_view key) const {
    const Ptr* p = objects_.find(key);
    return p ? *p : nullptr;
  }
  size_t size() const { return size_; }
  uint64_t version() const { return version_; }
  template <class F>
  void for_each(F&& f) const {
    objects_.for_each([&](const std::string&, const Ptr& p) { f(p); });
  }
  // Every object as one vector, rebuilt only after a write: for a reader that takes the whole
  // store on every reconcile (the planner's input), a walk over a contiguous vector instead of
  // the shards' trees, which are cold in the cache by then. Writer's thread only.
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
    objects_.for_each([&](const std::string& k, const Ptr&) { out.push_back(k); });
    return out;
  }

  // The current state, frozen. Repeated calls without writes in between share one snapshot.
  SnapshotPtr snapshot() {
    if (cached_ && cached_->version_ == version_) return cached_;
    auto s = std::make_shared<Snapshot>();
    s->objects_ = objects_.freeze();
    for (const auto& idx : indexes_) s->indexes_.emplace(idx.name, idx.shards.freeze());
    s->size_ = size_;
    s->version_ = version_;
    cached_ = s;
    return s;
  }

 private:
  struct Index {
    std::string name;
    IndexFn fn;
    IndexShards shards;
  };

  void touch() { ++version_; }

  void reindex(const std::string& key, const T* old_obj, const Ptr& new_obj) {
    std::vector<std::string> old_values, new_values;
    for (auto& idx : indexes_) {
      old_values.clear();
      new_values.clear();
      if (old_obj) idx.fn(*old_obj, old_values);
      if (new_obj) idx.fn(*new_obj, new_values);
      for (const auto& v : old_values)
        if (std::find(new_values.begin(), new_values.end(), v) == new_values.end()) bucket_remove(idx, v, key);
      for (const auto& v : new_values) bucket_put(idx, v, key, new_obj);
    }
  }

  void bucket_put(Index& idx, const std::string& value, const std::string& key, const Ptr& obj) {
    auto& shard = idx.shards.edit(value);
    auto& bucket = shard[value];
    auto items = bucket ? std::make_shared<std::vector<Ptr>>(*bucket) : std::make_shared<std::vector<Ptr>>();
    auto pos = std::lower_bound(items->begin(), items->end(), key,
                                [&](const Ptr& p, const std::string& k) { return key_(*p) < k; });
    if (pos != items->end() && key_(**pos) == key) *pos = obj;
    else items->insert(pos, obj);
    bucket = std::move(items);
  }

  void bucket_remove(Index& idx, const std::string& value, const std::string& key) {
    auto& shard = idx.shards.edit(value);
    auto it = shard.find(value);
    if (it == shard.end()) return;
    auto items = std::make_shared<std::vector<Ptr>>(*it->second);
    std::erase_if(*items, [&](const Ptr& p) { return key_(*p) == key; });
    if (items->empty()) shard.erase(it);
    else it->second = std::move(items);
  }

  KeyFn key_;
  Objects objects_;
  std::vector<Index> indexes_;
  size_t size_ = 0;
  uint64_t version_ = 0;
  SnapshotPtr cached_;
  mutable std::vector<Ptr> values_;
  mutable uint64_t values_version_ = UINT64_MAX;
};

}  // namespace spotshift::runtime
