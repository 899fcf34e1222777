#include "cluster.hpp"

#include "schema.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spotshift::kubesim {

namespace {

// Everything but metadata and status: what bumps metadata.generation.
bool spec_changed(const Value& a, const Value& b) {
  auto fields = [](const Value& v) {
    std::vector<std::pair<std::string, const Value*>> out;
    if (!v.IsObject()) return out;
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
      std::string_view k(it->name.GetString(), it->name.GetStringLength());
      if (k == "metadata" || k == "status" || k == "apiVersion" || k == "kind") continue;
      out.emplace_back(std::string(k), &it->value);
    }
    std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    return out;
  };
  auto fa = fields(a), fb = fields(b);
  if (fa.size() != fb.size()) return true;
  for (size_t i = 0; i < fa.size(); ++i)
    if (fa[i].first != fb[i].first || !json_equal(*fa[i].second, *fb[i].second)) return true;
  return false;
}

// Equal JSON, leaving member `ignore` of a and b out, and "resourceVersion" inside member
// `ignore_rv_in` (either may be null).
bool equal_except(const Value& a, const Value& b, const char* ignore, const char* ignore_rv_in) {
  if (!a.IsObject() || !b.IsObject()) return json_equal(a, b);
  auto counted = [&](const Value& v) { return v.MemberCount() - (ignore && v.HasMember(ignore) ? 1 : 0); };
  if (counted(a) != counted(b)) return false;
  for (auto it = a.MemberBegin(); it != a.MemberEnd(); ++it) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (ignore && name == ignore) continue;
    auto other = b.FindMember(it->name);
    if (other == b.MemberEnd()) return false;
    bool same = ignore_rv_in && name == ignore_rv_in ? equal_except(it->value, other->value, "resourceVersion", nullptr)
                                                     : json_equal(it->value, other->value);
    if (!same) return false;
  }
  return true;
}

// Whether a write changes nothing but metadata.resourceVersion. Compared in place: copying both
// documents to drop the field first was about a fifth of kubesim's cost per write.
bool same_ignoring_rv(const Value& a, const Value& b) { return equal_except(a, b, nullptr, "metadata"); }

bool has_finalizers(const Value& obj) {
  const Value* f = json_path(obj, {"metadata", "finalizers"});
  return f && f->IsArray() && f->Size() > 0;
}

}  // namespace

std::vector<std::string> dns_name_errors(std::string_view s, bool allow_dots) {
  std::vector<std::string> out;
  const size_t most = allow_dots ? 253 : 63;
  if (s.size() > most) out.push_back(fmt::format("must be no more than {} characters", most));
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  bool ok = !s.empty() && alnum(s.front()) && alnum(s.back());
  for (size_t i = 0; ok && i < s.size(); ++i) {
    const char c = s[i];
    ok = alnum(c) || c == '-' || (c == '.' && allow_dots && alnum(s[i - 1]) && alnum(s[i + 1]));
  }
  if (!ok)
    out.push_back(allow_dots ? "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
                               "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                               "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                             : "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
                               "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                               "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
  return out;
}

Cluster::Cluster(SimClock& clock, ClusterOptions options)
    : clock_(clock), options_(options), store_(options.history_limit), rng_(std::random_device{}()) {
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    Doc d;
    d.Parse(fmt::format(R"({{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{}"}}}})", ns).c_str());
    auto r = create_internal(*registry_.namespaces(), "", std::move(d), {}, false);
    (void)r;
  }
}

std::string Cluster::new_uid() {
  std::uniform_int_distribution<int> hex(0, 15);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string u = "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx";
  for (char& c : u) {
    if (c == 'x') c = kHex[hex(rng_)];
    else if (c == 'y') c = kHex[8 + hex(rng_) % 4];
  }
  return u;
}

std::string Cluster::random_suffix(size_t n) {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  std::string s;
  for (size_t i = 0; i < n; ++i) s += kAlphabet[pick(rng_)];
  return s;
}

Error Cluster::not_found(const ResourceType& rt, std::string_view name) {
  return Error::api(404, "NotFound", fmt::format("{} \"{}\" not found", rt.qualified_plural(), name));
}

Error Cluster::conflict(const ResourceType& rt, std::string_view name, std::string_view detail) {
  return Error::api(409, "Conflict",
                    fmt::format("Operation cannot be fulfilled on {} \"{}\": {}", rt.qualified_plural(), name,
                                detail.empty() ? "the object has been modified; please apply your changes to the latest "
                                                 "version and try again"
                                               : detail));
}

Error Cluster::invalid(const ResourceType& rt, std::string_view name, std::vector<StatusCause> causes) {
  Error e = Error::api(422, "Invalid", fmt::format("{} \"{}\" is invalid: {}", rt.qualified_kind(), name, join_causes(causes)));
  e.causes = std::move(causes);
  return e;
}

Error Cluster::bad_request(std::string message) { return Error::api(400, "BadRequest", std::move(message)); }

Result<ObjectPtr> Cluster::get(const ResourceType& rt, std::string_view ns, std::string_view name) const {
  auto obj = store_.get(rt, Store::key_of(rt, ns, name));
  if (!obj) return not_found(rt, name);
  return obj;
}

Result<ObjectPtr> Cluster::create(const ResourceType& rt, std::string_view ns, Doc obj, const WriteOptions& opts) {
  return create_internal(rt, ns, std::move(obj), opts, false);
}

Result<ObjectPtr> Cluster::load(Doc obj) {
  std::string_view api_version = json_string(obj, {"apiVersion"});
  std::string_view kind = json_string(obj, {"kind"});
  const ResourceType* rt = registry_.find_kind(api_version, kind);
  if (!rt) return Error::invalid(fmt::format("no resource for apiVersion \"{}\" kind \"{}\"", api_version, kind));
  std::string ns(namespace_of(obj));
  if (rt->namespaced && ns.empty()) ns = "default";
  if (rt->namespaced && !store_.get(*registry_.namespaces(), ns)) {
    Doc d;
    d.Parse(fmt::format(R"({{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{}"}}}})", ns).c_str());
    if (auto r = create_internal(*registry_.namespaces(), "", std::move(d), {}, false); !r) return r.error();
  }
  return create_internal(*rt, ns, std::move(obj), {}, true);
}

Result<void> Cluster::validate_custom(const ResourceType& rt, Doc& obj, std::string_view name, const WriteOptions& opts) {
  if (!rt.crd || !rt.schema) return {};
  std::vector<StatusCause> causes;
  std::vector<std::string> unknown;
  rt.schema->apply_root(obj, obj.GetAllocator(), causes, unknown);
  if (!unknown.empty()) {
    if (opts.field_validation == "Strict") {
      std::vector<std::string> msgs;
      for (const auto& u : unknown) msgs.push_back(fmt::format("unknown field \"{}\"", u));
      return bad_request(fmt::format("strict decoding error: {}", fmt::join(msgs, ", ")));
    }
    if (opts.field_validation == "Warn" && opts.warnings)
      for (const auto& u : unknown) opts.warnings->push_back(fmt::format("unknown field \"{}\"", u));
  }
  if (!causes.empty()) return invalid(rt, name, std::move(causes));
  return {};
}

Result<ObjectPtr> Cluster::create_internal(const ResourceType& rt, std::string_view ns, Doc obj, const WriteOptions& opts, bool load) {
  if (!obj.IsObject()) return bad_request("the body of the request must be a JSON object");
  // Mutating admission sees the object before its name is generated and its uid set, as the API
  // server's webhooks do.
  if (!load)
    if (auto r = call_mutating_webhooks(rt, ns.empty() ? namespace_of(obj) : ns, obj, opts); !r) return r.error();
  Alloc& a = obj.GetAllocator();
  std::string_view api_version = json_string(obj, {"apiVersion"});
  if (!api_version.empty() && api_version != rt.group_version())
    return bad_request(
        fmt::format("the API version in the data ({}) does not match the expected API version ({})", api_version, rt.group_version()));
  std::string_view kind = json_string(obj, {"kind"});
  if (!kind.empty() && kind != rt.kind)
    return bad_request(fmt::format("the kind in the data ({}) does not match the expected kind ({})", kind, rt.kind));
  set_str(obj, "apiVersion", rt.group_version(), a);
  set_str(obj, "kind", rt.kind, a);
  Value& m = ensure_object(obj, "metadata", a);

  std::string name(json_string(m, {"name"}));
  std::string_view generate = json_string(m, {"generateName"});
  if (name.empty() && generate.empty())
    return invalid(rt, "", {{"FieldValueRequired", "metadata.name", "Required value: name or generateName is required"}});

  if (rt.namespaced) {
    std::string_view body_ns = json_string(m, {"namespace"});
    if (!body_ns.empty() && !ns.empty() && body_ns != ns)
      return bad_request("the namespace of the provided object does not match the namespace sent on the request");
    if (ns.empty()) ns = body_ns;
    if (ns.empty()) return bad_request("the namespace of the object must be set");
    auto ns_obj = store_.get(*registry_.namespaces(), ns);
    if (!ns_obj) return not_found(*registry_.namespaces(), ns);
    if (json_string(ns_obj->doc, {"status", "phase"}) == "Terminating")
      return Error::api(403, "Forbidden",
                        fmt::format("{} \"{}\" is forbidden: unable to create new content in namespace {} because it is "
                                    "being terminated",
                                    rt.qualified_plural(), name.empty() ? std::string(generate) : name, ns));
    set_str(m, "namespace", ns, a);
  } else {
    drop_field(m, "namespace");
  }

  if (name.empty()) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      name = std::string(generate) + random_suffix();
      if (!store_.get(rt, Store::key_of(rt, ns, name))) break;
    }
    set_str(m, "name", name, a);
  }
  if (!rt.group.starts_with("events") && &rt != registry_.events()) {
    std::vector<StatusCause> causes;
    add_invalid(name, "metadata.name", dns_name_errors(name, &rt != registry_.namespaces()), causes);
    if (!causes.empty()) {
      // ValidateObjectMeta goes on to the labels, among which a Namespace's name already is
      // (kubernetes.io/metadata.name, added before validation).
      if (&rt == registry_.namespaces()) set_str(ensure_object(m, "labels", a), "kubernetes.io/metadata.name", name, a);
      check_metadata_labels(obj, causes);
      return invalid(rt, name, std::move(causes));
    }
  }
  if (store_.get(rt, Store::key_of(rt, ns, name)))
    return Error::api(409, "AlreadyExists", fmt::format("{} \"{}\" already exists", rt.qualified_plural(), name));

  set_str(m, "uid", load && !json_string(m, {"uid"}).empty() ? std::string(json_string(m, {"uid"})) : new_uid(), a);
  if (!load || json_string(m, {"creationTimestamp"}).empty()) set_str(m, "creationTimestamp", format_time(now()), a);
  drop_field(m, "resourceVersion");
  if (!load) {
    drop_field(m, "deletionTimestamp");
    drop_field(m, "deletionGracePeriodSeconds");
  }
  if (rt.has_generation || rt.crd) set_int(m, "generation", 1, a);
  if (rt.status_subresource && !load && &rt != registry_.nodes()) drop_field(obj, "status");

  if (auto r = validate_custom(rt, obj, name, opts); !r) return r.error();
  if (auto r = admit(rt, obj, a, nullptr, load); !r) return r.error();

  if (opts.dry_run) {
    auto stored = std::make_shared<StoredObject>();
    stored->json = to_json(obj);
    stored->doc = std::move(obj);
    stored->key = Store::key_of(rt, ns, name);
    return ObjectPtr(stored);
  }
  auto stored = store_.put(rt, std::move(obj));
  after_write(rt, stored);
  return stored;
}

Result<ObjectPtr> Cluster::update(const ResourceType& rt, std::string_view ns, std::string_view name, Doc obj, bool status,
                                  const WriteOptions& opts) {
  auto old = store_.get(rt, Store::key_of(rt, ns, name));
  if (!old) return not_found(rt, name);
  if (!obj.IsObject()) return bad_request("the body of the request must be a JSON object");
  std::string_view body_name = json_string(obj, {"metadata", "name"});
  if (!body_name.empty() && body_name != name)
    return bad_request(fmt::format("the name of the object ({}) does not match the name on the URL ({})", body_name, name));
  return update_internal(rt, old, std::move(obj), status, opts);
}

Result<ObjectPtr> Cluster::update_internal(const ResourceType& rt, const ObjectPtr& old, Doc next, bool status, const WriteOptions& opts) {
  std::string name(name_of(old->doc));
  Alloc& a = next.GetAllocator();
  std::string_view rv = json_string(next, {"metadata", "resourceVersion"});
  if (!rv.empty() && rv != json_string(old->doc, {"metadata", "resourceVersion"})) return conflict(rt, name);
  if (faults_.take_conflict(rt.plural, old->key)) return conflict(rt, name);

  if (status) {
    // /status: only .status changes.
    Value new_status;
    if (const Value* s = json_member(next, "status")) new_status.CopyFrom(*s, a);
    next.CopyFrom(old->doc, a);
    if (new_status.IsNull()) drop_field(next, "status");
    else set(next, "status", std::move(new_status), a);
  } else {
    set_str(next, "apiVersion", rt.group_version(), a);
    set_str(next, "kind", rt.kind, a);
    Value& m = ensure_object(next, "metadata", a);
    // Fields the server owns.
    for (const char* k :
         {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"}) {
      if (const Value* ov = json_path(old->doc, {"metadata", k})) set(m, k, copy_of(*ov, a), a);
      else drop_field(m, k);
    }
    if (rt.status_subresource) {
      if (const Value* s = json_member(old->doc, "status")) set(next, "status", copy_of(*s, a), a);
      else drop_field(next, "status");
    }
    if (auto r = validate_custom(rt, next, name, opts); !r) return r.error();
    if (auto r = admit(rt, next, a, &old->doc, false); !r) return r.error();
    if ((rt.has_generation || rt.crd) && spec_changed(old->doc, next))
      set_int(m, "generation", json_int(old->doc, {"metadata", "generation"}).value_or(0) + 1, a);
  }
  if (status && rt.crd && rt.schema) {
    if (auto r = validate_custom(rt, next, name, opts); !r) return r.error();
  }
  if (same_ignoring_rv(old->doc, next)) return old;  // a no-op write does not bump resourceVersion
  if (opts.dry_run) {
    auto stored = std::make_shared<StoredObject>();
    stored->json = to_json(next);
    stored->doc = std::move(next);
    stored->key = old->key;
    return ObjectPtr(stored);
  }
  bool deleting = json_path(next, {"metadata", "deletionTimestamp"}) != nullptr;
  auto stored = store_.put(rt, std::move(next));
  after_write(rt, stored);
  // The last finalizer gone from an object being deleted: it goes now (pods wait for the kubelet).
  if (deleting && !has_finalizers(stored->doc) && &rt.stored() != registry_.pods()) {
    erase(rt, stored->key);
  }
  return stored;
}

Result<ObjectPtr> Cluster::patch(const ResourceType& rt, std::string_view ns, std::string_view name, PatchType type, const Value& patch,
                                 bool status, const WriteOptions& opts) {
  auto old = store_.get(rt, Store::key_of(rt, ns, name));
  if (!old) {
    if (type != PatchType::kApply) return not_found(rt, name);
    Doc fresh;
    fresh.CopyFrom(patch, fresh.GetAllocator());
    return create_internal(rt, ns, std::move(fresh), opts, false);
  }
  Doc next;
  next.CopyFrom(old->doc, next.GetAllocator());
  Alloc& a = next.GetAllocator();
  // The patch must not carry the resourceVersion through unless it set one (a precondition).
  if (Value* m = get_mut(next, "metadata")) drop_field(*m, "resourceVersion");
  switch (type) {
    case PatchType::kMerge:
    case PatchType::kApply:
      merge_patch(next, patch, a);
      break;
    case PatchType::kStrategic:
      if (rt.crd)
        return Error::api(415, "UnsupportedMediaType",
                          "strategic merge patch is not supported for custom resources: use a merge or JSON patch");
      if (auto r = strategic_merge_patch(next, patch, a); !r) return bad_request(r.error().message);
      break;
    case PatchType::kJson: {
      // A JSON patch sees the object as stored, resourceVersion included.
      if (const Value* orv = json_path(old->doc, {"metadata", "resourceVersion"}))
        set(ensure_object(next, "metadata", a), "resourceVersion", copy_of(*orv, a), a);
      if (auto r = json_patch(next, patch, a); !r) return Error::api(422, "Invalid", r.error().message);
      break;
    }
  }
  if (!next.IsObject()) return bad_request("the patch produced something that is not an object");
  return update_internal(rt, old, std::move(next), status, opts);
}

Result<ObjectPtr> Cluster::remove(const ResourceType& rt, std::string_view ns, std::string_view name, const DeleteOptions& opts) {
  auto obj = store_.get(rt, Store::key_of(rt, ns, name));
  if (!obj) return not_found(rt, name);
  std::string_view uid = json_string(obj->doc, {"metadata", "uid"});
  if (!opts.precondition_uid.empty() && opts.precondition_uid != uid)
    return conflict(rt, name,
                    fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}", opts.precondition_uid, uid));
  std::string_view rv = json_string(obj->doc, {"metadata", "resourceVersion"});
  if (!opts.precondition_resource_version.empty() && opts.precondition_resource_version != rv)
    return conflict(rt, name,
                    fmt::format("Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object "
                                "meta: {}",
                                opts.precondition_resource_version, rv));
  if (opts.dry_run) return obj;
  bool orphan = opts.propagation_policy == "Orphan";

  if (&rt.stored() == registry_.pods()) {
    std::string_view phase = json_string(obj->doc, {"status", "phase"});
    bool bound = !json_string(obj->doc, {"spec", "nodeName"}).empty();
    bool terminal = phase == "Succeeded" || phase == "Failed";
    int64_t grace = opts.grace_period_seconds.value_or(json_int(obj->doc, {"spec", "terminationGracePeriodSeconds"}).value_or(30));
    if (grace < 0) grace = 0;
    if ((bound && !terminal && grace > 0) || has_finalizers(obj->doc)) {
      Time deadline = now() + std::chrono::seconds(grace);
      if (auto existing = parse_time(json_string(obj->doc, {"metadata", "deletionTimestamp"}))) {
        if (*existing <= deadline) return obj;  // a repeat delete may only shorten the grace period
      }
      return mutate(rt, obj->key, [&](Value& o, Alloc& a) {
        Value& m = ensure_object(o, "metadata", a);
        set_str(m, "deletionTimestamp", format_time(deadline), a);
        set_int(m, "deletionGracePeriodSeconds", grace, a);
      });
    }
    return delete_now(rt, obj, orphan);
  }
  if (has_finalizers(obj->doc)) {
    if (json_path(obj->doc, {"metadata", "deletionTimestamp"})) return obj;
    return mutate(rt, obj->key, [&](Value& o, Alloc& a) {
      Value& m = ensure_object(o, "metadata", a);
      set_str(m, "deletionTimestamp", format_time(now()), a);
      set_int(m, "deletionGracePeriodSeconds", 0, a);
    });
  }
  if (&rt == registry_.namespaces()) {
    auto marked = mutate(rt, obj->key, [&](Value& o, Alloc& a) {
      set_str(ensure_object(o, "metadata", a), "deletionTimestamp", format_time(now()), a);
      set_str(ensure_object(o, "status", a), "phase", "Terminating", a);
    });
    delete_namespace_contents(name);
    erase(rt, obj->key);
    return marked;
  }
  return delete_now(rt, obj, orphan);
}

Result<ObjectPtr> Cluster::delete_now(const ResourceType& rt, const ObjectPtr& obj, bool orphan) {
  auto last = store_.erase(rt, obj->key);
  if (last) after_delete(rt, last, orphan);
  return last ? last : obj;
}

void Cluster::erase(const ResourceType& rt, std::string_view key, bool orphan) {
  auto last = store_.erase(rt, key);
  if (last) after_delete(rt, last, orphan);
}

void Cluster::delete_namespace_contents(std::string_view ns) {
  for (const ResourceType* rt : registry_.all()) {
    if (!rt->namespaced || rt->storage) continue;
    std::vector<std::string> keys;
    std::string prefix = std::string(ns) + "/";
    const auto& objs = store_.objects(*rt);
    for (auto it = objs.lower_bound(prefix); it != objs.end() && it->first.starts_with(prefix); ++it) keys.push_back(it->first);
    for (const auto& k : keys) erase(*rt, k);
  }
}

Result<ObjectPtr> Cluster::set_node_condition(std::string_view node, std::string_view type, std::string_view status,
                                              std::string_view reason, std::string_view message) {
  return mutate(*registry().nodes(), node, [&](Value& o, Alloc& a) {
    Value* found = &ensure_condition(ensure_object(o, "status", a), type, a);
    if (json_string(*found, {"status"}) != status) set_str(*found, "lastTransitionTime", format_time(now()), a);
    set_str(*found, "status", status, a);
    set_str(*found, "reason", reason, a);
    set_str(*found, "message", message, a);
    set_str(*found, "lastHeartbeatTime", format_time(now()), a);
  });
}

Result<ObjectPtr> Cluster::mutate(const ResourceType& rt, std::string_view key, const std::function<void(Value& obj, Alloc& a)>& fn) {
  auto old = store_.get(rt, key);
  if (!old) return not_found(rt, key);
  PooledDoc next;
  next.doc.CopyFrom(old->doc, *next.pool);
  fn(next.doc, *next.pool);
  if (same_ignoring_rv(old->doc, next.doc)) return old;
  auto stored = store_.put(rt, std::move(next));
  after_write(rt, stored);
  return stored;
}

void Cluster::set_root_ca(std::string pem) {
  root_ca_pem_ = std::move(pem);
  std::vector<std::string> names;
  for (const auto& [k, o] : store_.objects(*registry_.namespaces())) names.emplace_back(name_of(o->doc));
  for (const auto& n : names) publish_root_ca(n);
}

void Cluster::publish_root_ca(std::string_view ns) {
  const ResourceType* cm = registry_.find("", "v1", "configmaps");
  if (!cm || store_.get(*cm, Store::key_of(*cm, ns, "kube-root-ca.crt"))) return;
  Doc d(rapidjson::kObjectType);
  auto& a = d.GetAllocator();
  set_str(d, "apiVersion", "v1", a);
  set_str(d, "kind", "ConfigMap", a);
  Value& meta = ensure_object(d, "metadata", a);
  set_str(meta, "name", "kube-root-ca.crt", a);
  set_str(meta, "namespace", ns, a);
  set_str(ensure_object(meta, "annotations", a), "kubernetes.io/description",
          "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
          "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
          "clusters.",
          a);
  set_str(ensure_object(d, "data", a), "ca.crt", root_ca_pem_, a);
  (void)create_internal(*cm, ns, std::move(d), {}, false);
}

void Cluster::after_write(const ResourceType& rt, const ObjectPtr& obj) {
  if (&rt == registry_.namespaces() && !json_path(obj->doc, {"metadata", "deletionTimestamp"})) publish_root_ca(name_of(obj->doc));
  if (&rt == registry_.crds()) {
    if (auto r = register_crd(obj->doc); !r) {
      // An invalid schema leaves the CRD stored but not established, as a real apiserver would.
      mutate(rt, obj->key, [&](Value& o, Alloc& a) {
        Value& st = ensure_object(o, "status", a);
        Value conds(rapidjson::kArrayType);
        Value c(rapidjson::kObjectType);
        set_str(c, "type", "Established", a);
        set_str(c, "status", "False", a);
        set_str(c, "reason", "InvalidSchema", a);
        set_str(c, "message", r.error().message, a);
        conds.PushBack(c, a);
        set(st, "conditions", std::move(conds), a);
      });
    }
  }
}

void Cluster::after_delete(const ResourceType& rt, const ObjectPtr& obj, bool orphan) {
  if (&rt == registry_.crds()) {
    std::string_view group = json_string(obj->doc, {"spec", "group"});
    std::string_view plural = json_string(obj->doc, {"spec", "names", "plural"});
    for (const ResourceType* t : registry_.all()) {
      if (t->crd && t->group == group && t->plural == plural) {
        std::vector<std::string> keys;
        for (const auto& [k, o] : store_.objects(*t)) keys.push_back(k);
        for (const auto& k : keys) erase(*t, k);
      }
    }
    registry_.unserve(group, plural);
    return;
  }
  // Garbage collection: dependents of a deleted owner go too (background propagation), or lose
  // their owner reference (orphan). Pods and events own nothing, so they skip the scan.
  if (&rt == registry_.pods() || &rt == registry_.events()) return;
  std::string uid(json_string(obj->doc, {"metadata", "uid"}));
  if (uid.empty()) return;
  for (const ResourceType* t : registry_.all()) {
    if (t->storage) continue;
    std::vector<std::string> dependents;
    for (const auto& [k, o] : store_.objects(*t)) {
      const Value* refs = json_path(o->doc, {"metadata", "ownerReferences"});
      if (!refs || !refs->IsArray()) continue;
      for (const auto& r : refs->GetArray())
        if (json_string(r, {"uid"}) == uid) dependents.push_back(k);
    }
    for (const auto& k : dependents) {
      if (orphan) {
        mutate(*t, k, [&](Value& o, Alloc&) {
          Value* refs = get_mut(*get_mut(o, "metadata"), "ownerReferences");
          for (auto it = refs->Begin(); it != refs->End();) it = json_string(*it, {"uid"}) == uid ? refs->Erase(it) : it + 1;
        });
      } else {
        auto dep = store_.get(*t, k);
        if (!dep) continue;
        DeleteOptions opts;
        (void)remove(*t, namespace_of(dep->doc), name_of(dep->doc), opts);
      }
    }
  }
}

}  // namespace spotshift::kubesim
