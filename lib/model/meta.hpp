#pragma once
// The parts of ObjectMeta the operator reads, and shared small types.

#include "core/time.hpp"
#include "model/intern.hpp"
#include "model/json.hpp"
#include "model/labels.hpp"

#include <optional>
#include <string>

namespace spotshift::model {

// A condition's status; kAbsent when the object has no such condition.
enum class ConditionStatus : uint8_t { kAbsent, kTrue, kFalse, kUnknown };
ConditionStatus parse_condition_status(std::string_view s);

struct ObjectMeta {
  std::string name;
  InternedString namespace_;  // empty for cluster-scoped objects
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  Labels labels;
  Time creation_timestamp{};
  std::optional<Time> deletion_timestamp;

  // "namespace/name", or "name" for cluster-scoped objects: the cache and work-queue key.
  std::string key() const;
  bool operator==(const ObjectMeta&) const = default;
};

// Decodes the metadata object r is at; calls on_annotation(key, value) for each annotation so a
// kind keeps only the ones it reads, and other(key) for every other member: it reads the value
// and returns true, or returns false to have it skipped.
template <class OnAnnotation, class OnOther>
void decode_meta(JsonDecoder& d, JsonReader& r, ObjectMeta& meta, OnAnnotation&& on_annotation, OnOther&& other) {
  d.members(r, [&](std::string_view k) {
    if (k == "name") {
      meta.name = d.string(r);
      d.name_object(meta.namespace_.view(), meta.name);
    } else if (k == "namespace") {
      thread_local InternedString last;
      meta.namespace_ = intern_as_before(d.string(r), last);
      d.name_object(meta.namespace_.view(), meta.name);
    } else if (k == "uid") {
      meta.uid = d.string(r);
    } else if (k == "resourceVersion") {
      meta.resource_version = d.string(r);
    } else if (k == "generation") {
      meta.generation = d.integer(r);
    } else if (k == "labels") {
      meta.labels = d.string_map(r);
    } else if (k == "creationTimestamp") {
      meta.creation_timestamp = d.time(r).value_or(Time{});
    } else if (k == "deletionTimestamp") {
      meta.deletion_timestamp = d.time(r);
    } else if (k == "annotations") {
      d.members(r, [&](std::string_view key) {
        if (auto v = d.optional_string(r)) on_annotation(key, *v);
        return true;
      });
    } else {
      return other(k);
    }
    return true;
  });
}

// Decodes the Kubernetes object r is at, as d's kind: metadata with decode_meta (annotations to
// on_annotation), every other top-level member with member(key), which reads the value and returns
// true, or returns false to have it skipped. An object without metadata is an error.
template <class OnAnnotation, class Member>
Result<void> decode_object(JsonDecoder& d, JsonReader& r, ObjectMeta& meta, OnAnnotation&& on_annotation, Member&& member) {
  if (r.peek() != JsonType::kObject) {
    d.wrong_type("an object", r);
    return d.take_error();
  }
  bool has_meta = false;
  d.members(r, [&](std::string_view key) {
    if (key != "metadata") return member(key);
    has_meta = r.peek() == JsonType::kObject;
    decode_meta(d, r, meta, on_annotation, [](std::string_view) { return false; });
    return true;
  });
  if (d.ok() && !has_meta) d.fail("metadata is missing");
  if (!d.ok()) return d.take_error();
  return Result<void>{};
}

// The same for a kind that reads no annotations.
template <class Member>
Result<void> decode_object(JsonDecoder& d, JsonReader& r, ObjectMeta& meta, Member&& member) {
  return decode_object(
      d, r, meta, [](std::string_view, std::string_view) {}, member);
}

// metadata.resourceVersion of an object's JSON text, read no further than needed; empty when it
// has none.
std::string object_resource_version(std::string_view json);

// An IntOrString such as PodDisruptionBudget.minAvailable: 3 or "50%".
struct IntOrString {
  bool is_percent = false;
  int32_t value = 0;  // the integer, or the percentage

  static Result<IntOrString> parse(std::string_view text);
  // The absolute value against total: a percentage is rounded up or down as asked.
  int32_t scaled(int32_t total, bool round_up) const;
  std::string to_string() const;
  bool operator==(const IntOrString&) const = default;
};

std::optional<IntOrString> decode_int_or_string(JsonDecoder& d, JsonReader& r);

}  // namespace spotshift::model
