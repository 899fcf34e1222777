#include "store.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spotshift::kubesim {

std::string_view to_string(EventType t) {
  switch (t) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
  }
  return "?";
}

Store::Store(size_t history_limit) : history_limit_(history_limit) {}

std::string Store::key_of(const ResourceType& rt, std::string_view ns, std::string_view name) {
  if (!rt.stored().namespaced) return std::string(name);
  std::string k;
  k.reserve(ns.size() + 1 + name.size());
  k.append(ns).append("/").append(name);
  return k;
}

const Store::Objects& Store::objects(const ResourceType& rt) const {
  static const Objects kEmpty;
  auto it = objects_.find(&rt.stored());
  return it == objects_.end() ? kEmpty : it->second;
}

ObjectPtr Store::get(const ResourceType& rt, std::string_view key) const {
  const Objects& objs = objects(rt);
  auto it = objs.find(key);
  return it == objs.end() ? nullptr : it->second;
}

ObjectPtr Store::stamp(const ResourceType& rt, PooledDoc in, uint64_t rv) const {
  auto obj = std::make_shared<StoredObject>();
  Doc& doc = in.doc;
  Value& m = ensure_object(doc, "metadata", doc.GetAllocator());
  set_str(m, "resourceVersion", std::to_string(rv), doc.GetAllocator());
  obj->key = key_of(rt, json_string(doc, {"metadata", "namespace"}), json_string(doc, {"metadata", "name"}));
  obj->rv = rv;
  obj->json = to_json(doc);
  obj->pool = std::move(in.pool);
  obj->doc = std::move(doc);
  return obj;
}

ObjectPtr Store::put(const ResourceType& rt, Doc doc) { return put(rt, PooledDoc{nullptr, std::move(doc)}); }

ObjectPtr Store::put(const ResourceType& rt_in, PooledDoc doc) {
  const ResourceType& rt = rt_in.stored();
  auto obj = stamp(rt, std::move(doc), ++rv_);
  Objects& objs = objects_[&rt];
  auto it = objs.find(obj->key);
  ObjectPtr prev;
  if (it != objs.end()) {
    prev = it->second;
    it->second = obj;
  } else {
    objs.emplace(obj->key, obj);
  }
  record(Change{rv_, prev ? EventType::kModified : EventType::kAdded, &rt, obj, prev});
  return obj;
}

ObjectPtr Store::erase(const ResourceType& rt_in, std::string_view key) {
  const ResourceType& rt = rt_in.stored();
  auto oit = objects_.find(&rt);
  if (oit == objects_.end()) return nullptr;
  auto it = oit->second.find(key);
  if (it == oit->second.end()) return nullptr;
  ObjectPtr prev = it->second;
  oit->second.erase(it);
  PooledDoc copy;
  copy.doc.CopyFrom(prev->doc, *copy.pool);
  auto last = stamp(rt, std::move(copy), ++rv_);
  record(Change{rv_, EventType::kDeleted, &rt, last, prev});
  return last;
}

void Store::record(Change c) {
  history_.push_back(c);
  while (history_.size() > history_limit_) {
    compacted_ = history_.front().rv;
    history_.pop_front();
  }
  for (auto& l : listeners_) l(history_.back());
}

size_t Store::first_after(uint64_t rv) const {
  auto it = std::upper_bound(history_.begin(), history_.end(), rv, [](uint64_t v, const Change& c) { return v < c.rv; });
  return static_cast<size_t>(it - history_.begin());
}

void Store::compact(uint64_t rv) {
  while (!history_.empty() && history_.front().rv <= rv) history_.pop_front();
  compacted_ = std::max(compacted_, std::min(rv, rv_));
}

void Store::set_history_limit(size_t n) {
  history_limit_ = std::max<size_t>(n, 1);
  while (history_.size() > history_limit_) {
    compacted_ = history_.front().rv;
    history_.pop_front();
  }
}

Result<std::vector<ObjectPtr>> Store::list_at(const ResourceType& rt_in, uint64_t rv, std::string_view prefix, std::string_view after,
                                              size_t limit, const std::function<bool(const StoredObject&)>& match, bool* more) const {
  const ResourceType& rt = rt_in.stored();
  if (rv < compacted_) return Error::api(410, "Expired", fmt::format("too old resource version: {} ({})", rv, compacted_ + 1));
  // Keys changed after rv, mapped to their state at rv (null: did not exist yet).
  std::map<std::string, ObjectPtr, std::less<>> overrides;
  size_t first = first_after(rv);
  for (size_t i = history_.size(); i-- > first;) {
    const Change& c = history_[i];
    if (c.rt != &rt || !c.obj->key.starts_with(prefix)) continue;
    overrides[c.obj->key] = c.prev;
  }
  const Objects& current = objects(rt);
  std::vector<ObjectPtr> out;
  if (more) *more = false;
  bool after_set = !after.empty() && after >= prefix;
  auto cit = after_set ? current.upper_bound(after) : current.lower_bound(prefix);
  auto oit = after_set ? overrides.upper_bound(after) : overrides.lower_bound(prefix);
  auto in_prefix = [&](const std::string& k) { return k.starts_with(prefix); };
  while ((cit != current.end() && in_prefix(cit->first)) || oit != overrides.end()) {
    if (cit != current.end() && !in_prefix(cit->first)) cit = current.end();
    ObjectPtr candidate;
    if (oit == overrides.end() || (cit != current.end() && cit->first < oit->first)) {
      candidate = cit->second;
      ++cit;
    } else {
      if (cit != current.end() && cit->first == oit->first) ++cit;
      candidate = oit->second;
      ++oit;
    }
    if (!candidate || !match(*candidate)) continue;
    if (limit && out.size() == limit) {
      if (more) *more = true;
      break;
    }
    out.push_back(std::move(candidate));
  }
  return out;
}

}  // namespace spotshift::kubesim
