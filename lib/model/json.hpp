#pragma once
// Decoding JSON into model types without throwing: a JsonDecoder tracks the field path, records
// the first problem, and hands back defaults so decoding can finish cheaply. Every decoder reads
// the text in one pass through a JsonReader, with no document in between. A RapidJSON document
// (JsonDocument) is kept only where JSON is built or rewritten: a patch, the YAML reader, kubesim.
//
//   JsonDecoder d("pod");
//   d.members(r, [&](std::string_view key) {
//     if (key == "nodeName") p.node_name = InternedString(d.string(r));
//     else return false;   // skipped
//     return true;
//   });
//   if (!d.ok()) return d.take_error();   // decoding pod "ns/x": spec.nodeName: expected a string, got a number

#include "core/error.hpp"
#include "core/time.hpp"
#include "model/json_reader.hpp"
#include "model/labels.hpp"
#include "model/quantity.hpp"
#include "model/resources.hpp"
#include "model/selector.hpp"

#include <rapidjson/document.h>

#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spotshift::model {

using JsonValue = rapidjson::Value;
using JsonDocument = rapidjson::Document;

// A member name for lookups. It must be a Value: a bare StringRef converts to const char* and
// RapidJSON would then measure the key with strlen, ignoring the view's length.
inline JsonValue json_key(std::string_view s) { return JsonValue(rapidjson::StringRef(s.empty() ? "" : s.data(), s.size())); }

// Lookups in a document, for the code that reads one (a patch built from an object, kubesim):
// nullptr (or the fallback) when a member is absent, null or of another type.
const JsonValue* json_member(const JsonValue& v, std::string_view key);
const JsonValue* json_path(const JsonValue& v, std::initializer_list<std::string_view> path);
std::string_view json_string(const JsonValue& v, std::initializer_list<std::string_view> path, std::string_view fallback = {});
std::optional<int64_t> json_int(const JsonValue& v, std::initializer_list<std::string_view> path);
bool json_bool(const JsonValue& v, std::initializer_list<std::string_view> path, bool fallback = false);

// Parses text into a document; the error gives the byte offset and RapidJSON's reason.
Result<void> parse_json(std::string_view text, JsonDocument& doc);
// A value written back out as JSON text.
std::string json_text(const JsonValue& v);

// Decodes the one value of text with decode(reader), which reads it whole; anything after it is
// an error, named after kind.
template <class Decode>
auto decode_whole(std::string_view kind, std::string_view text, Decode&& decode) -> decltype(decode(std::declval<JsonReader&>())) {
  JsonReader r(text);
  auto out = decode(r);
  if (out && !r.finish()) return Error::decode(std::string("decoding ") + std::string(kind) + ": " + r.error());
  return out;
}

class JsonDecoder {
 public:
  // kind names the object in messages ("decoding pod \"ns/x\": spec..."); with no kind, for a
  // part decoded on its own, messages start with the path.
  explicit JsonDecoder(std::string_view kind) : kind_(kind) {}

  bool ok() const { return !failed_; }
  Error take_error();
  // Names the object in error messages once its metadata is known.
  void name_object(std::string_view ns, std::string_view name);
  // Records a problem at the current path. Only the first problem is kept.
  void fail(std::string_view message) { fail_at(message, 0); }
  // Records a problem one segment up: for a member that should not be in its object.
  void fail_above(std::string_view message) { fail_at(message, 1); }

  // A path segment that lives for a scope.
  class Scope {
   public:
    Scope(JsonDecoder& d, std::string_view name) : d_(d) { d_.push({name, 0, false}); }
    Scope(JsonDecoder& d, size_t index) : d_(d) { d_.push({{}, index, true}); }
    ~Scope() { d_.pop(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    JsonDecoder& d_;
  };
  Scope field(std::string_view name) { return Scope(*this, name); }

  // One pass over a JsonReader: each call reads the next value. null reads as absent; a value
  // of the wrong type is recorded and skipped. After the first problem values are skipped
  // unread, so the reader stays in step for what follows (the next item of a list).
  //
  // Calls f(key) for each member of an object, with the key on the path; f reads the member's
  // value and returns true, or returns false and the value is skipped.
  template <class F>
  void members(JsonReader& r, F&& f) {
    if (!open(r, JsonType::kObject)) return;
    std::string_view key;
    while (r.next_member(key)) {
      if (!ok()) {
        r.skip();
        continue;
      }
      Scope s(*this, key);
      if (!f(key)) r.skip();
    }
    if (!r.ok()) fail(r.error());
  }
  // Calls f() for each element of an array, with the index on the path; f reads the element.
  template <class F>
  void elements(JsonReader& r, F&& f) {
    if (!open(r, JsonType::kArray)) return;
    size_t i = 0;
    while (r.next_element()) {
      if (!ok()) {
        r.skip();
        continue;
      }
      Scope e(*this, i++);
      f();
    }
    if (!r.ok()) fail(r.error());
  }
  std::string_view string(JsonReader& r) { return optional_string(r).value_or(std::string_view{}); }
  std::optional<std::string_view> optional_string(JsonReader& r);
  int64_t integer(JsonReader& r, int64_t fallback = 0) { return optional_integer(r).value_or(fallback); }
  std::optional<int64_t> optional_integer(JsonReader& r);
  bool boolean(JsonReader& r, bool fallback = false);
  std::optional<Time> time(JsonReader& r);
  // An object of strings, such as labels.
  Labels string_map(JsonReader& r);
  // A quantity given as a string or a JSON number.
  std::optional<Quantity> quantity(JsonReader& r);
  ResourceList resource_list(JsonReader& r);
  std::optional<LabelSelector> label_selector(JsonReader& r);
  std::optional<NodeSelector> node_selector(JsonReader& r);
  NodeSelectorTerm node_selector_term(JsonReader& r);
  // True when the next value is an object, which is left to read; otherwise the value is read:
  // null as absent, anything else recorded as the wrong type.
  bool at_object(JsonReader& r) { return at(r, JsonType::kObject); }

  // Records the reader's error, or that the next value is not what was wanted, and skips it.
  void wrong_type(std::string_view want, JsonReader& r);

 private:
  // at_object() for either type.
  bool at(JsonReader& r, JsonType type);
  // Opens an object or array; false (and the value read) when it is null or of another type.
  bool open(JsonReader& r, JsonType type);
  // Reads a value that is not the one wanted: null as absent, anything else as the wrong type.
  void not_wanted(JsonReader& r, std::string_view want);

  struct Segment {
    std::string_view name;
    size_t index;
    bool is_index;
  };
  std::string path(size_t depth) const;
  void fail_at(std::string_view message, size_t up);

  // The path: its first segments in place (a decoder per object, so no allocation for the
  // usual depth), deeper ones in path_more_.
  static constexpr size_t kPathInPlace = 12;
  void push(const Segment& s) {
    if (depth_ < kPathInPlace) path_[depth_] = s;
    else push_more(s);
    ++depth_;
  }
  void pop() {
    if (--depth_ >= kPathInPlace) path_more_.pop_back();
  }
  void push_more(const Segment& s);  // out of line: a push is on every member's path

  std::string kind_;
  std::string object_namespace_;
  std::string object_name_;
  std::array<Segment, kPathInPlace> path_;
  std::vector<Segment> path_more_;
  size_t depth_ = 0;
  bool failed_ = false;
  Error error_;
};

}  // namespace spotshift::model
