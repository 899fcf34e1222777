#pragma once
// A label map: a small vector sorted by key, with interned keys and values.

#include "model/intern.hpp"

#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

namespace spotshift::model {

class Labels {
 public:
  using Entry = std::pair<InternedString, InternedString>;

  Labels() = default;
  Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> entries);
  // From entries in any order; of entries with the same key the last is kept, as set() would.
  explicit Labels(std::vector<Entry> entries);

  // Inserts or replaces.
  void set(std::string_view key, std::string_view value);
  void set(const InternedString& key, const InternedString& value);
  void erase(std::string_view key);

  // The value of key, or null when the label is absent (an empty value is present). A pointer
  // into the labels, not a copy: no handle is counted.
  const InternedString* get(const InternedString& key) const;
  const InternedString* get(std::string_view key) const;
  bool has(const InternedString& key) const { return get(key) != nullptr; }
  bool has(std::string_view key) const { return get(key) != nullptr; }

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

  // "a=b,c=d" in key order.
  std::string to_string() const;

  bool operator==(const Labels&) const = default;

 private:
  std::vector<Entry> entries_;
};

}  // namespace spotshift::model
