// The scale subresource of Deployments, ReplicaSets and StatefulSets: an autoscaling/v1 Scale
// view of the object's spec.replicas, what `kubectl scale` and autoscalers read and write.

#include "cluster.hpp"
#include "model/json.hpp"

#include <fmt/format.h>

namespace spotshift::kubesim {

namespace {

// The apiserver writes the selector in its string form (labels.Selector.String()).
std::string selector_string(const Value& obj) {
  const Value* spec = json_member(obj, "spec");
  if (!spec) return {};
  auto sel = label_selector_of(*spec, "selector");
  return sel ? sel->to_string() : std::string();
}

Error invalid_scale(std::string_view name, std::string_view field_path, std::string message) {
  Error e = Error::api(422, "Invalid", fmt::format("Scale.autoscaling \"{}\" is invalid: {}: {}", name, field_path, message));
  e.causes.push_back({"FieldValueInvalid", std::string(field_path), std::move(message)});
  return e;
}

Doc scale_from(const Value& o) {
  Doc s;
  Alloc& a = s.GetAllocator();
  s.SetObject();
  set_str(s, "kind", "Scale", a);
  set_str(s, "apiVersion", "autoscaling/v1", a);
  Value& m = ensure_object(s, "metadata", a);
  for (const char* k : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"})
    if (const Value* v = json_path(o, {"metadata", k})) set(m, k, copy_of(*v, a), a);
  // spec.replicas defaults to 1 on these kinds and is omitempty in autoscaling/v1 (0 is left
  // out); an unset status count is 0, and status.replicas is always there.
  Value& spec = ensure_object(s, "spec", a);
  if (int64_t replicas = json_int(o, {"spec", "replicas"}).value_or(1); replicas != 0) set_int(spec, "replicas", replicas, a);
  Value& st = ensure_object(s, "status", a);
  set_int(st, "replicas", json_int(o, {"status", "replicas"}).value_or(0), a);
  if (std::string sel = selector_string(o); !sel.empty()) set_str(st, "selector", sel, a);
  return s;
}

}  // namespace

Result<Doc> Cluster::scale_of(const ResourceType& rt, std::string_view ns, std::string_view name) const {
  auto obj = get(rt, ns, name);
  if (!obj) return obj.error();
  return scale_from((*obj)->doc);
}

Result<Doc> Cluster::update_scale(const ResourceType& rt, std::string_view ns, std::string_view name, const Value& scale,
                                  const WriteOptions& opts) {
  if (!scale.IsObject()) return bad_request("the body of the request must be a JSON object");
  std::string_view kind = json_string(scale, {"kind"});
  std::string_view api_version = json_string(scale, {"apiVersion"});
  if ((!kind.empty() && kind != "Scale") || (!api_version.empty() && api_version != "autoscaling/v1"))
    return bad_request(fmt::format("the body of the request must be an autoscaling/v1 Scale, got {} {}", api_version, kind));
  std::string_view body_name = json_string(scale, {"metadata", "name"});
  if (!body_name.empty() && body_name != name)
    return bad_request(fmt::format("the name of the object ({}) does not match the name on the URL ({})", body_name, name));
  // ScaleSpec.replicas is omitempty: an absent count is 0, as on the apiserver.
  int64_t replicas = 0;
  if (const Value* r = json_path(scale, {"spec", "replicas"}); r && !r->IsNull()) {
    if (!r->IsInt64()) return bad_request("spec.replicas must be an integer");
    replicas = r->GetInt64();
  }
  if (replicas < 0)
    return invalid_scale(name, "spec.replicas", fmt::format("Invalid value: {}: must be greater than or equal to 0", replicas));
  if (replicas > INT32_MAX) return bad_request("spec.replicas does not fit in an int32");

  auto old = get(rt, ns, name);
  if (!old) return old.error();
  Doc next;
  next.CopyFrom((*old)->doc, next.GetAllocator());
  Alloc& a = next.GetAllocator();
  set_int(ensure_object(next, "spec", a), "replicas", replicas, a);
  // The Scale's resourceVersion is the object's: a stale one is a 409, an absent one no precondition.
  Value& m = ensure_object(next, "metadata", a);
  if (std::string_view rv = json_string(scale, {"metadata", "resourceVersion"}); !rv.empty()) set_str(m, "resourceVersion", rv, a);
  else drop_field(m, "resourceVersion");
  auto updated = update_internal(rt, *old, std::move(next), false, opts);
  if (!updated) return updated.error();
  return scale_from((*updated)->doc);  // under dryRun, the object as it would be
}

}  // namespace spotshift::kubesim
