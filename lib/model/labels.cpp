#include "model/labels.hpp"

#include <algorithm>

namespace spotshift::model {

Labels::Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> entries) {
  for (const auto& [k, v] : entries) set(k, v);
}

Labels::Labels(std::vector<Entry> entries) : entries_(std::move(entries)) {
  auto by_key = [](const Entry& a, const Entry& b) { return a.first < b.first; };
  if (entries_.size() <= 32) {
    // Label sets are small: an insertion sort is stable and, unlike std::stable_sort, allocates nothing.
    for (size_t i = 1; i < entries_.size(); ++i)
      for (size_t j = i; j > 0 && by_key(entries_[j], entries_[j - 1]); --j) std::swap(entries_[j], entries_[j - 1]);
  } else {
    std::stable_sort(entries_.begin(), entries_.end(), by_key);
  }
  // Of a run of equal keys keep the last.
  size_t out = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (i + 1 < entries_.size() && entries_[i + 1].first == entries_[i].first) continue;
    entries_[out++] = entries_[i];
  }
  entries_.resize(out);
}

void Labels::set(std::string_view key, std::string_view value) { set(InternedString(key), InternedString(value)); }

void Labels::set(const InternedString& key, const InternedString& value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key, [](const Entry& e, const InternedString& k) { return e.first < k; });
  if (it != entries_.end() && it->first == key) {
    it->second = value;
  } else {
    entries_.insert(it, Entry{key, value});
  }
}

void Labels::erase(std::string_view key) {
  std::erase_if(entries_, [&](const Entry& e) { return e.first.view() == key; });
}

const InternedString* Labels::get(const InternedString& key) const {
  // Label sets are small: a linear scan comparing 8-byte handles beats a binary search.
  for (const auto& e : entries_)
    if (e.first == key) return &e.second;
  return nullptr;
}

const InternedString* Labels::get(std::string_view key) const {
  for (const auto& e : entries_)
    if (e.first.view() == key) return &e.second;
  return nullptr;
}

std::string Labels::to_string() const {
  std::string out;
  for (const auto& e : entries_) {
    if (!out.empty()) out += ',';
    out += e.first.view();
    out += '=';
    out += e.second.view();
  }
  return out;
}

}  // namespace spotshift::model
