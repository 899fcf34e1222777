#pragma once
// Request building with no I/O: exact methods, paths, queries and headers for every verb, so
// they can be tested as plain values.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace spotshift::kube {

// What a request addresses: a resource of an API group version.
struct Resource {
  std::string group;  // "" for core
  std::string version;
  std::string plural;
  std::string kind;
  bool namespaced = true;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }

  static const Resource& pods();
  static const Resource& nodes();
  static const Resource& namespaces();
  static const Resource& config_maps();
  static const Resource& pod_disruption_budgets();
  static const Resource& leases();
  static const Resource& persistent_volume_claims();
  static const Resource& persistent_volumes();
  static const Resource& events();       // events.k8s.io/v1
  static const Resource& core_events();  // v1
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 500;  // page size; 0 for everything in one response
  std::string continue_token;
  std::string resource_version;        // "", "0" or a version
  std::string resource_version_match;  // "", "NotOlderThan" or "Exact"
  std::optional<int> timeout_seconds;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;
  bool allow_bookmarks = true;
  std::optional<int> timeout_seconds;
  bool send_initial_events = false;
};

struct WriteOptions {
  bool dry_run = false;
  std::string field_manager;
  std::string field_validation;  // Strict, Warn or Ignore
};

enum class PatchType { kMerge, kStrategic, kJson, kApply };
std::string_view content_type(PatchType t);

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;
  std::string uid_precondition;
  std::string resource_version_precondition;
  std::string propagation_policy;  // Background, Foreground or Orphan
  bool dry_run = false;
};

struct Request {
  std::string method;
  std::string path;
  std::string query;  // encoded, without '?'
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Safe to resend after a 429/5xx with Retry-After or a failure to connect: reads, and writes
  // the server rejects on a stale resourceVersion.
  bool idempotent = false;
  // A watch: the response is a stream.
  bool watch = false;

  std::string target() const { return query.empty() ? path : path + "?" + query; }
  const std::string* header(std::string_view name) const;
};

std::string resource_path(const Resource& r, std::string_view ns, std::string_view name = {}, std::string_view subresource = {});

Request get_request(const Resource& r, std::string_view ns, std::string_view name, std::string_view subresource = {});
Request list_request(const Resource& r, std::string_view ns, const ListOptions& o);
Request watch_request(const Resource& r, std::string_view ns, const WatchOptions& o);
Request create_request(const Resource& r, std::string_view ns, std::string body, const WriteOptions& o = {});
Request update_request(const Resource& r, std::string_view ns, std::string_view name, std::string body, const WriteOptions& o = {},
                       std::string_view subresource = {});
Request patch_request(const Resource& r, std::string_view ns, std::string_view name, PatchType type, std::string body,
                      const WriteOptions& o = {}, std::string_view subresource = {});
Request delete_request(const Resource& r, std::string_view ns, std::string_view name, const DeleteOptions& o = {});
// POST pods/NAME/eviction with a policy/v1 Eviction carrying deleteOptions.
Request eviction_request(std::string_view ns, std::string_view name, const DeleteOptions& o = {});

// The DeleteOptions JSON body.
std::string delete_options_json(const DeleteOptions& o);

}  // namespace spotshift::kube
