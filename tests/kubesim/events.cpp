#include "events.hpp"

#include "cluster.hpp"

#include <fmt/format.h>

namespace spotshift::kubesim {

namespace {

// (core name, events.k8s.io name) for the renamed fields.
constexpr std::pair<const char*, const char*> kRenamed[] = {
    {"involvedObject", "regarding"},
    {"message", "note"},
    {"reportingComponent", "reportingController"},
    {"source", "deprecatedSource"},
    {"firstTimestamp", "deprecatedFirstTimestamp"},
    {"lastTimestamp", "deprecatedLastTimestamp"},
    {"count", "deprecatedCount"},
};

void convert(const Value& in, Value& out, Alloc& a, bool to_new) {
  out.SetObject();
  for (auto it = in.MemberBegin(); it != in.MemberEnd(); ++it) {
    std::string_view k(it->name.GetString(), it->name.GetStringLength());
    std::string_view target = k;
    for (auto [core, fresh] : kRenamed) {
      if (to_new && k == core) target = fresh;
      if (!to_new && k == fresh) target = core;
    }
    set(out, target, copy_of(it->value, a), a);
  }
  set_str(out, "apiVersion", to_new ? "events.k8s.io/v1" : "v1", a);
  set_str(out, "kind", "Event", a);
}

}  // namespace

void core_event_to_new(const Value& core, Value& out, Alloc& a) { convert(core, out, a, true); }

void new_event_to_core(const Value& in, Value& core, Alloc& a) {
  convert(in, core, a, false);
  // The core API's aggregated view expects a source component too.
  if (core.IsObject() && !json_path(core, {"source", "component"}) && !json_string(core, {"reportingComponent"}).empty()) {
    Value& src = ensure_object(core, "source", a);
    set_str(src, "component", json_string(core, {"reportingComponent"}), a);
  }
}

void Cluster::emit_event(const ResourceType& rt, const Value& obj, std::string_view type, std::string_view reason, std::string_view message,
                         std::string_view component) {
  std::string ns(rt.namespaced ? namespace_of(obj) : std::string_view("default"));
  std::string uid(json_string(obj, {"metadata", "uid"}));
  std::string dedup = fmt::format("{}|{}|{}|{}|{}", uid, type, reason, message, component);
  std::string stamp = format_time(now());
  if (auto it = event_keys_.find(dedup); it != event_keys_.end()) {
    if (store_.get(*registry_.events(), it->second)) {
      mutate(*registry_.events(), it->second, [&](Value& e, Alloc& a) {
        set_int(e, "count", json_int(e, {"count"}).value_or(1) + 1, a);
        set_str(e, "lastTimestamp", stamp, a);
      });
      return;
    }
    event_keys_.erase(it);
  }
  if (event_keys_.size() > 4096) event_keys_.clear();
  Doc ev(rapidjson::kObjectType);
  Alloc& a = ev.GetAllocator();
  set_str(ev, "apiVersion", "v1", a);
  set_str(ev, "kind", "Event", a);
  Value& m = ensure_object(ev, "metadata", a);
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now().time_since_epoch()).count();
  set_str(m, "name", fmt::format("{}.{:x}", name_of(obj), nanos), a);
  set_str(m, "namespace", ns, a);
  Value& io = ensure_object(ev, "involvedObject", a);
  set_str(io, "kind", rt.kind, a);
  if (rt.namespaced) set_str(io, "namespace", namespace_of(obj), a);
  set_str(io, "name", name_of(obj), a);
  set_str(io, "uid", uid, a);
  set_str(io, "apiVersion", rt.group_version(), a);
  set_str(io, "resourceVersion", json_string(obj, {"metadata", "resourceVersion"}), a);
  set_str(ev, "reason", reason, a);
  set_str(ev, "message", message, a);
  set_str(ev, "type", type, a);
  set_str(ensure_object(ev, "source", a), "component", component, a);
  set_str(ev, "firstTimestamp", stamp, a);
  set_str(ev, "lastTimestamp", stamp, a);
  set_int(ev, "count", 1, a);
  set_str(ev, "reportingComponent", component, a);
  set_str(ev, "reportingInstance", "kubesim", a);
  auto r = create_internal(*registry_.events(), ns, std::move(ev), {}, false);
  if (r) event_keys_[dedup] = (*r)->key;
}

}  // namespace spotshift::kubesim
