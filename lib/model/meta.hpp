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
  size_t heap_bytes() const;
};

// Decodes metadata; calls on_annotation(key, value) for each annotation so a kind keeps only
// the ones it reads.
template <class OnAnnotation>
void decode_meta(JsonDecoder& d, const JsonValue& obj, ObjectMeta& meta, OnAnnotation&& on_annotation) {
  const JsonValue* m = d.object(obj, "metadata");
  if (!m) {
    d.fail("metadata is missing");
    return;
  }
  auto scope = d.field("metadata");
  meta.name = std::string(d.string(*m, "name"));
  meta.namespace_ = InternedString(d.string(*m, "namespace"));
  d.name_object(meta.namespace_.view(), meta.name);
  meta.uid = std::string(d.string(*m, "uid"));
  meta.resource_version = std::string(d.string(*m, "resourceVersion"));
  meta.generation = d.integer(*m, "generation");
  meta.labels = d.string_map(*m, "labels");
  meta.creation_timestamp = d.time(*m, "creationTimestamp").value_or(Time{});
  meta.deletion_timestamp = d.time(*m, "deletionTimestamp");
  d.each_member(*m, "annotations", [&](std::string_view k, const JsonValue& v) {
    if (!v.IsString()) return d.wrong_type("a string", v);
    on_annotation(k, std::string_view(v.GetString(), v.GetStringLength()));
  });
}

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

std::optional<IntOrString> decode_int_or_string(JsonDecoder& d, const JsonValue& obj, std::string_view key);

}  // namespace spotshift::model
