#pragma once
// RapidJSON helpers for the simulator, which works on whole objects rather than compact structs.

#include "core/error.hpp"
#include "model/json.hpp"
#include "model/meta.hpp"

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

// The operator's document helpers (lib/model/json.hpp): parse_json, json_key for member lookups,
// and the lookups that return nullptr (or the fallback) when a member is absent, null or of
// another type.
using model::json_bool;
using model::json_int;
using model::json_key;
using model::json_member;
using model::json_path;
using model::json_string;
using model::parse_json;

std::string to_json(const Value& v);
// The same JSON with every object's members sorted by name and null members left out (as a Go
// struct decodes them): equal for documents that differ only in member order or explicit nulls.
std::string canonical_json(const Value& v);

// s with every byte that does not start a valid UTF-8 sequence replaced by U+FFFD, as Go's JSON
// decoder reads a body (so a string's length is what the API server counts); nothing when s is
// valid, as nearly every body is.
std::optional<std::string> go_utf8(std::string_view s);

// An empty view may have a null data(), which RapidJSON rejects: use "" instead.
inline Value str(std::string_view s, Alloc& a) { return Value(s.empty() ? "" : s.data(), static_cast<rapidjson::SizeType>(s.size()), a); }

Value* get_mut(Value& v, std::string_view key);

// Writers; obj must be an object.
Value& set(Value& obj, std::string_view key, Value&& v, Alloc& a);
void set_str(Value& obj, std::string_view key, std::string_view s, Alloc& a);
void set_int(Value& obj, std::string_view key, int64_t n, Alloc& a);
void set_bool(Value& obj, std::string_view key, bool b, Alloc& a);
// An `omitempty` integer: set, or left out when 0 (as the API server writes it).
void set_count(Value& obj, std::string_view key, int64_t n, Alloc& a);
Value& ensure_object(Value& obj, std::string_view key, Alloc& a);
Value& ensure_array(Value& obj, std::string_view key, Alloc& a);
// The entry of status's conditions with this type, added (holding only its type) when missing.
Value& ensure_condition(Value& status, std::string_view type, Alloc& a);
void drop_field(Value& obj, std::string_view key);
Value copy_of(const Value& v, Alloc& a);

// metadata helpers
inline const Value* meta(const Value& obj) { return json_member(obj, "metadata"); }
std::string_view name_of(const Value& obj);
std::string_view namespace_of(const Value& obj);
// metadata.labels (string values only).
model::Labels labels_of(const Value& obj);

// A metav1.LabelSelector member of obj, read by the operator's decoder; nothing when it is
// absent, null or invalid.
std::optional<model::LabelSelector> label_selector_of(const Value& obj, std::string_view key);

// An intstr.IntOrString field as the controllers read it: nothing when absent or null; an
// integer; a string that is a percentage; 0 for anything else (a string without '%' is not a
// number to them).
std::optional<model::IntOrString> int_or_percent(const Value* v);

}  // namespace spotshift::kubesim
