#pragma once
// Decoding JSON into model types without throwing: a JsonDecoder tracks the field path, records
// the first problem, and hands back defaults so decoding can finish cheaply. It reads either a
// RapidJSON value (member lookups by name) or, in one pass, a JsonReader over the text, which is
// what the pod decoder and the shared field decoders are written for (no document in between).
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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spotshift::model {

using JsonValue = rapidjson::Value;
using JsonDocument = rapidjson::Document;

// A member name for lookups. It must be a Value: a bare StringRef converts to const char* and
// RapidJSON would then measure the key with strlen, ignoring the view's length.
inline JsonValue json_key(std::string_view s) {
  return JsonValue(rapidjson::StringRef(s.empty() ? "" : s.data(), s.size()));
}

// Parses text into a document; the error gives the byte offset and RapidJSON's reason.
Result<void> parse_json(std::string_view text, JsonDocument& doc);
// A value written back out as JSON text.
std::string json_text(const JsonValue& v);

// Reads the next value of r into a document and decodes it with decode(value): for the kinds
// whose decoders read a RapidJSON value.
template <class Decode>
auto decode_document(JsonReader& r, Decode&& decode) -> decltype(decode(std::declval<const JsonValue&>())) {
  std::string_view text;
  if (!r.read_raw(text)) return Error::decode(r.error());
  JsonDocument doc;
  if (auto p = parse_json(text, doc); !p) return p.error();
  return decode(doc);
}

class JsonDecoder {
 public:
  explicit JsonDecoder(std::string_view kind) : kind_(kind) {}

  bool ok() const { return !failed_; }
  Error take_error();
  // Names the object in error messages once its metadata is known.
  void name_object(std::string_view ns, std::string_view name);
  // Records a problem at the current path. Only the first problem is kept.
  void fail(std::string_view message);

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

  // The member, or nullptr when it is absent or null. A non-object obj is recorded as an error.
  const JsonValue* get(const JsonValue& obj, std::string_view key);
  // The member if it is an object (nullptr when absent or null; wrong type recorded).
  const JsonValue* object(const JsonValue& obj, std::string_view key);

  std::string_view string(const JsonValue& obj, std::string_view key);
  std::optional<std::string_view> optional_string(const JsonValue& obj, std::string_view key);
  int64_t integer(const JsonValue& obj, std::string_view key, int64_t fallback = 0);
  std::optional<int64_t> optional_integer(const JsonValue& obj, std::string_view key);
  bool boolean(const JsonValue& obj, std::string_view key, bool fallback = false);
  std::optional<Time> time(const JsonValue& obj, std::string_view key);

  // Calls f(element) for each element of an array member, with the index on the path.
  template <class F>
  void each(const JsonValue& obj, std::string_view key, F&& f) {
    const JsonValue* arr = get(obj, key);
    if (!arr) return;
    Scope s(*this, key);
    if (!arr->IsArray()) return wrong_type("an array", *arr);
    for (rapidjson::SizeType i = 0; i < arr->Size() && ok(); ++i) {
      Scope e(*this, size_t(i));
      f((*arr)[i]);
    }
  }
  // Calls f(name, value) for each member of an object member, with the name on the path.
  template <class F>
  void each_member(const JsonValue& obj, std::string_view key, F&& f) {
    const JsonValue* o = get(obj, key);
    if (!o) return;
    Scope s(*this, key);
    if (!o->IsObject()) return wrong_type("an object", *o);
    for (auto it = o->MemberBegin(); it != o->MemberEnd() && ok(); ++it) {
      std::string_view name(it->name.GetString(), it->name.GetStringLength());
      Scope m(*this, name);
      f(name, it->value);
    }
  }

  // Decodes obj[key] with read(reader), through a JsonReader over the member's text; what read
  // returns, or a default T when the member is absent or null.
  template <class Read>
  auto read_member(const JsonValue& obj, std::string_view key, Read&& read) -> decltype(read(std::declval<JsonReader&>())) {
    const JsonValue* v = get(obj, key);
    if (!v) return {};
    Scope s(*this, key);
    std::string text = json_text(*v);
    JsonReader r(text);
    return read(r);
  }

  // Field decoders shared by every kind, for a member of a RapidJSON object. They read the
  // member through a JsonReader over its text, with the decoders below.
  // A ResourceList member: cpu in milli-units, everything else in units.
  ResourceList resource_list(const JsonValue& obj, std::string_view key);
  // A metav1.LabelSelector member; nothing when absent or null.
  std::optional<LabelSelector> label_selector(const JsonValue& obj, std::string_view key);
  // A v1.NodeSelector ({nodeSelectorTerms: [...]}) member.
  std::optional<NodeSelector> node_selector(const JsonValue& obj, std::string_view key);

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

  void wrong_type(std::string_view want, const JsonValue& got);
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
  std::string path() const;

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

std::string_view json_type_name(const JsonValue& v);

}  // namespace spotshift::model
