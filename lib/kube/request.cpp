#include "kube/request.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

namespace spotshift::kube {

namespace {

class Query {
 public:
  void add(std::string_view key, std::string_view value) {
    if (!q_.empty()) q_ += '&';
    q_ += key;
    q_ += '=';
    q_ += url_encode(value);
  }
  void add_if(std::string_view key, std::string_view value) {
    if (!value.empty()) add(key, value);
  }
  std::string str() const { return q_; }

 private:
  std::string q_;
};

void write_options(Query& q, const WriteOptions& o) {
  if (o.dry_run) q.add("dryRun", "All");
  q.add_if("fieldManager", o.field_manager);
  q.add_if("fieldValidation", o.field_validation);
}

Request base(std::string method, std::string path, bool idempotent) {
  Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.idempotent = idempotent;
  r.headers.emplace_back("Accept", "application/json");
  return r;
}

}  // namespace

const Resource& Resource::pods() {
  static const Resource r{"", "v1", "pods", "Pod", true};
  return r;
}
const Resource& Resource::nodes() {
  static const Resource r{"", "v1", "nodes", "Node", false};
  return r;
}
const Resource& Resource::persistent_volume_claims() {
  static const Resource r{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true};
  return r;
}
const Resource& Resource::persistent_volumes() {
  static const Resource r{"", "v1", "persistentvolumes", "PersistentVolume", false};
  return r;
}
const Resource& Resource::namespaces() {
  static const Resource r{"", "v1", "namespaces", "Namespace", false};
  return r;
}
const Resource& Resource::config_maps() {
  static const Resource r{"", "v1", "configmaps", "ConfigMap", true};
  return r;
}
const Resource& Resource::pod_disruption_budgets() {
  static const Resource r{"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true};
  return r;
}
const Resource& Resource::leases() {
  static const Resource r{"coordination.k8s.io", "v1", "leases", "Lease", true};
  return r;
}
const Resource& Resource::events() {
  static const Resource r{"events.k8s.io", "v1", "events", "Event", true};
  return r;
}
const Resource& Resource::core_events() {
  static const Resource r{"", "v1", "events", "Event", true};
  return r;
}

std::string_view content_type(PatchType t) {
  switch (t) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategic:
      return "application/strategic-merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/json";
}

const std::string* Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return &v;
  return nullptr;
}

std::string resource_path(const Resource& r, std::string_view ns, std::string_view name, std::string_view subresource) {
  std::string p = r.group.empty() ? "/api/" + r.version : fmt::format("/apis/{}/{}", r.group, r.version);
  if (r.namespaced && !ns.empty()) p += fmt::format("/namespaces/{}", url_encode(ns));
  p += "/" + r.plural;
  if (!name.empty()) p += "/" + url_encode(name);
  if (!subresource.empty()) p += "/" + std::string(subresource);
  return p;
}

Request get_request(const Resource& r, std::string_view ns, std::string_view name, std::string_view subresource) {
  return base("GET", resource_path(r, ns, name, subresource), true);
}

Request list_request(const Resource& r, std::string_view ns, const ListOptions& o) {
  Request req = base("GET", resource_path(r, ns), true);
  Query q;
  q.add_if("labelSelector", o.label_selector);
  q.add_if("fieldSelector", o.field_selector);
  if (o.limit > 0) q.add("limit", std::to_string(o.limit));
  q.add_if("continue", o.continue_token);
  q.add_if("resourceVersion", o.resource_version);
  q.add_if("resourceVersionMatch", o.resource_version_match);
  if (o.timeout_seconds) q.add("timeoutSeconds", std::to_string(*o.timeout_seconds));
  req.query = q.str();
  return req;
}

Request watch_request(const Resource& r, std::string_view ns, const WatchOptions& o) {
  Request req = base("GET", resource_path(r, ns), true);
  req.watch = true;
  Query q;
  q.add("watch", "true");
  q.add_if("labelSelector", o.label_selector);
  q.add_if("fieldSelector", o.field_selector);
  q.add_if("resourceVersion", o.resource_version);
  if (o.allow_bookmarks) q.add("allowWatchBookmarks", "true");
  if (o.send_initial_events) {
    q.add("sendInitialEvents", "true");
    q.add("resourceVersionMatch", "NotOlderThan");
  }
  if (o.timeout_seconds) q.add("timeoutSeconds", std::to_string(*o.timeout_seconds));
  req.query = q.str();
  return req;
}

Request create_request(const Resource& r, std::string_view ns, std::string body, const WriteOptions& o) {
  Request req = base("POST", resource_path(r, ns), false);
  Query q;
  write_options(q, o);
  req.query = q.str();
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = std::move(body);
  return req;
}

Request update_request(const Resource& r, std::string_view ns, std::string_view name, std::string body, const WriteOptions& o,
                       std::string_view subresource) {
  Request req = base("PUT", resource_path(r, ns, name, subresource), body.find("\"resourceVersion\"") != std::string::npos);
  Query q;
  write_options(q, o);
  req.query = q.str();
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = std::move(body);
  return req;
}

Request patch_request(const Resource& r, std::string_view ns, std::string_view name, PatchType type, std::string body,
                      const WriteOptions& o, std::string_view subresource) {
  // A patch carrying a resourceVersion is a precondition: resending it cannot apply it twice.
  Request req = base("PATCH", resource_path(r, ns, name, subresource), body.find("\"resourceVersion\"") != std::string::npos);
  Query q;
  write_options(q, o);
  req.query = q.str();
  req.headers.emplace_back("Content-Type", std::string(content_type(type)));
  req.body = std::move(body);
  return req;
}

std::string delete_options_json(const DeleteOptions& o) {
  std::string out = R"({"kind":"DeleteOptions","apiVersion":"v1")";
  if (o.grace_period_seconds) out += fmt::format(R"(,"gracePeriodSeconds":{})", *o.grace_period_seconds);
  if (!o.uid_precondition.empty() || !o.resource_version_precondition.empty()) {
    out += R"(,"preconditions":{)";
    bool comma = false;
    if (!o.uid_precondition.empty()) {
      out += R"("uid":)" + json_quote(o.uid_precondition);
      comma = true;
    }
    if (!o.resource_version_precondition.empty())
      out += std::string(comma ? "," : "") + R"("resourceVersion":)" + json_quote(o.resource_version_precondition);
    out += "}";
  }
  if (!o.propagation_policy.empty()) out += R"(,"propagationPolicy":)" + json_quote(o.propagation_policy);
  if (o.dry_run) out += R"(,"dryRun":["All"])";
  return out + "}";
}

Request delete_request(const Resource& r, std::string_view ns, std::string_view name, const DeleteOptions& o) {
  Request req = base("DELETE", resource_path(r, ns, name), !o.uid_precondition.empty() || !o.resource_version_precondition.empty());
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = delete_options_json(o);
  return req;
}

Request eviction_request(std::string_view ns, std::string_view name, const DeleteOptions& o) {
  Request req = base("POST", resource_path(Resource::pods(), ns, name, "eviction"), false);
  req.headers.emplace_back("Content-Type", "application/json");
  std::string options = delete_options_json(o);
  req.body = fmt::format(R"({{"apiVersion":"policy/v1","kind":"Eviction","metadata":{{"name":{},"namespace":{}}},"deleteOptions":{}}})",
                         json_quote(name), json_quote(ns), options);
  return req;
}

}  // namespace spotshift::kube
