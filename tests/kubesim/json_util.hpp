#pragma once
// RapidJSON helpers for the simulator, which works on whole objects rather than compact structs.

#include "core/error.hpp"

#include <rapidjson/document.h>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace spotshift::kubesim {

using Value = rapidjson::Value;
using Doc = rapidjson::Document;
using Alloc = Doc::AllocatorType;

// A document with its own small pool. A Doc's default pool takes 64 KiB on its first allocation,
// so every stored version of a 2 KB object held 64 KiB of heap, and taking that memory from the
// system was a quarter of kubesim's cost per write. The pool must outlive the document.
struct PooledDoc {
  static constexpr size_t kChunk = 4096;
  std::unique_ptr<Alloc> pool = std::make_unique<Alloc>(kChunk);
  Doc doc{pool.get()};
};

Result<void> parse_into(std::string_view text, Doc& doc);
std::string to_json(const Value& v);
// The same JSON with every object's members sorted by name and null members left out (as a Go
// struct decodes them): equal for documents that differ only in member order or explicit nulls.
std::string canonical_json(const Value& v);

// A member name for lookups. It must be a Value: a bare StringRef converts to const char* and
// RapidJSON would then measure the key with strlen, ignoring the view's length.
inline Value ref(std::string_view s) { return Value(rapidjson::StringRef(s.empty() ? "" : s.data(), s.size())); }
// An empty view may have a null data(), which RapidJSON rejects: use "" instead.
inline Value str(std::string_view s, Alloc& a) {
  return Value(s.empty() ? "" : s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
}

// Lookups return nullptr (or the fallback) when a member is absent, null or of another type.
const Value* field(const Value& v, std::string_view key);
const Value* get_path(const Value& v, std::initializer_list<std::string_view> path);
std::string_view get_str(const Value& v, std::initializer_list<std::string_view> path, std::string_view fallback = {});
std::optional<int64_t> get_int(const Value& v, std::initializer_list<std::string_view> path);
bool get_bool(const Value& v, std::initializer_list<std::string_view> path, bool fallback = false);
Value* get_mut(Value& v, std::string_view key);

// Writers; obj must be an object.
Value& set(Value& obj, std::string_view key, Value&& v, Alloc& a);
void set_str(Value& obj, std::string_view key, std::string_view s, Alloc& a);
void set_int(Value& obj, std::string_view key, int64_t n, Alloc& a);
void set_bool(Value& obj, std::string_view key, bool b, Alloc& a);
Value& ensure_object(Value& obj, std::string_view key, Alloc& a);
Value& ensure_array(Value& obj, std::string_view key, Alloc& a);
void drop_field(Value& obj, std::string_view key);
Value copy_of(const Value& v, Alloc& a);

// metadata helpers
inline const Value* meta(const Value& obj) { return field(obj, "metadata"); }
std::string_view name_of(const Value& obj);
std::string_view namespace_of(const Value& obj);

}  // namespace spotshift::kubesim
