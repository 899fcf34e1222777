#pragma once
// The simulated apiserver's storage and admission layer: every write, whether it comes over HTTP
// or from a simulated controller, goes through here and gets the real apiserver's semantics
// (preconditions, status subresources, generation, defaults, validation, graceful deletion,
// finalizers, garbage collection, eviction with PodDisruptionBudgets).

#include "delete_options.hpp"
#include "faults.hpp"
#include "json_util.hpp"
#include "patch.hpp"
#include "resources.hpp"
#include "sim_clock.hpp"
#include "store.hpp"

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace spotshift::kubesim {

// What IsDNS1123Subdomain (dots allowed, up to 253 characters) or IsDNS1123Label (no dots, up to
// 63) finds wrong with a name, in the API server's words: the length first, then the form.
std::vector<std::string> dns_name_errors(std::string_view name, bool allow_dots);
// One FieldValueInvalid cause at path for each of errors about value ("Invalid value: \"v\": e").
void add_invalid(std::string_view value, const std::string& path, const std::vector<std::string>& errors, std::vector<StatusCause>& causes);
// ValidateLabels on an object's metadata.labels: each key and value.
void check_metadata_labels(const Value& obj, std::vector<StatusCause>& causes);

// What the API server checks of an events.k8s.io/v1 Event on create (its strict validation;
// core/v1 Events are checked only for what kubesim needs to store them).
Result<void> validate_new_event(const ResourceType& rt, std::string_view ns, const Value& event);

struct ClusterOptions {
  size_t history_limit = 100000;
  Duration kubelet_start_delay = std::chrono::seconds(1);  // bound pod -> Running and Ready
  Duration termination_cap = std::chrono::seconds(2);      // graceful deletion takes min(grace, cap)
  // ... and then this much longer: the kill after the grace period, the kubelet's and the API
  // server's latency, which a real cluster adds before the pod object is gone.
  Duration kill_latency = Duration::zero();
  Duration disrupted_pod_timeout = std::chrono::minutes(2);
  bool scheduler = true;
  bool workloads = true;  // Deployment, ReplicaSet, DaemonSet, StatefulSet, garbage collection
  bool kubelet = true;
  bool disruption = true;         // PodDisruptionBudget status
  bool node_lifecycle = true;     // condition and unschedulable taints
  bool stall_pdb_status = false;  // the disruption controller stops writing status
};

struct WriteOptions {
  bool dry_run = false;
  std::string field_validation;  // "", "Strict", "Warn" or "Ignore"
  std::vector<std::string>* warnings = nullptr;
};

class Cluster {
 public:
  Cluster(SimClock& clock, ClusterOptions options);

  Registry& registry() { return registry_; }
  const Registry& registry() const { return registry_; }
  Store& store() { return store_; }
  const Store& store() const { return store_; }
  SimClock& clock() { return clock_; }
  Faults& faults() { return faults_; }
  ClusterOptions& options() { return options_; }
  const ClusterOptions& options() const { return options_; }
  Time now() const { return clock_.now(); }

  // How admission webhooks are called (post_webhook in webhooks.hpp; the simulator sets it): an
  // https URL, the caBundle, the AdmissionReview, the timeout; the response's body. Unset: every
  // call fails, and the webhook's failurePolicy decides.
  using WebhookCaller = std::function<Result<std::string>(const std::string& url, const std::string& ca_pem, const std::string& body,
                                                          std::chrono::milliseconds)>;
  void set_webhook_caller(WebhookCaller caller) { webhook_caller_ = std::move(caller); }

  // The CA every namespace's kube-root-ca.crt ConfigMap publishes (kube-controller-manager's
  // root-ca-cert-publisher): set once the simulator has one; existing namespaces get it too.
  void set_root_ca(std::string pem);

  Result<ObjectPtr> get(const ResourceType& rt, std::string_view ns, std::string_view name) const;
  Result<ObjectPtr> create(const ResourceType& rt, std::string_view ns, Doc obj, const WriteOptions& opts = {});
  // status selects the /status subresource: only .status changes.
  Result<ObjectPtr> update(const ResourceType& rt, std::string_view ns, std::string_view name, Doc obj, bool status,
                           const WriteOptions& opts = {});
  Result<ObjectPtr> patch(const ResourceType& rt, std::string_view ns, std::string_view name, PatchType type, const Value& patch,
                          bool status, const WriteOptions& opts = {});
  Result<ObjectPtr> remove(const ResourceType& rt, std::string_view ns, std::string_view name, const DeleteOptions& opts);
  // POST pods/NAME/eviction with the registry's algorithm (kube-apiserver's eviction subresource,
  // pkg/registry/core/pod/storage/eviction.go; tests/fidelity compares the two).
  Result<void> evict(std::string_view ns, std::string_view name, const DeleteOptions& opts);
  // The scale subresource (Deployments, ReplicaSets, StatefulSets; the API routes only resources
  // that list it): the object as an autoscaling/v1 Scale, and a write of one, which sets
  // spec.replicas (a stale metadata.resourceVersion is 409).
  Result<Doc> scale_of(const ResourceType& rt, std::string_view ns, std::string_view name) const;
  Result<Doc> update_scale(const ResourceType& rt, std::string_view ns, std::string_view name, const Value& scale,
                           const WriteOptions& opts = {});
  // POST pods/NAME/binding.
  Result<void> bind(std::string_view ns, std::string_view name, std::string_view node);

  // Loads a scenario object as given: status kept, defaults applied, no admission checks on
  // state controllers own.
  Result<ObjectPtr> load(Doc obj);

  // Internal status write for controllers: mutate receives the object's status to edit.
  Result<ObjectPtr> mutate(const ResourceType& rt, std::string_view key, const std::function<void(Value& obj, Alloc& a)>& mutate);
  // Sets a node condition (added when absent), as POST /_sim/nodes/NAME/conditions does.
  Result<ObjectPtr> set_node_condition(std::string_view node, std::string_view type, std::string_view status,
                                       std::string_view reason = "KubesimControl", std::string_view message = "set through /_sim");
  // Removes an object for good (kubelet finished, finalizers gone), then collects dependents.
  void erase(const ResourceType& rt, std::string_view key, bool orphan = false);

  // Evictions accepted on a budget's status while the budget, counted from the pods as they are
  // at that moment (the disruption controller's maths), allowed none: each took a budget below
  // its minimum. A stale status lets this happen on a real API server too. One line each:
  // "namespace/budget: pod (healthy H, desired D)". The soak reports them.
  const std::vector<std::string>& budget_violations() const { return budget_violations_; }

  // Records a core/v1 Event about obj (deduplicated into count++ like the kubelet does).
  void emit_event(const ResourceType& rt, const Value& obj, std::string_view type, std::string_view reason, std::string_view message,
                  std::string_view component);

  // Error bodies with the apiserver's messages.
  static Error not_found(const ResourceType& rt, std::string_view name);
  static Error conflict(const ResourceType& rt, std::string_view name, std::string_view detail = {});
  static Error invalid(const ResourceType& rt, std::string_view name, std::vector<StatusCause> causes);
  static Error bad_request(std::string message);

  std::string new_uid();
  std::string random_suffix(size_t n = 5);

 private:
  Result<ObjectPtr> create_internal(const ResourceType& rt, std::string_view ns, Doc obj, const WriteOptions& opts, bool load);
  Result<ObjectPtr> update_internal(const ResourceType& rt, const ObjectPtr& old, Doc next, bool status, const WriteOptions& opts);
  Result<void> validate_custom(const ResourceType& rt, Doc& obj, std::string_view name, const WriteOptions& opts);
  // Calls the mutating admission webhooks that match a create (webhooks.hpp), applying their
  // patches to obj.
  Result<void> call_mutating_webhooks(const ResourceType& rt, std::string_view ns, Doc& obj, const WriteOptions& opts);
  Result<void> admit(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool load);
  Result<void> admit_pod(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool load);
  Result<void> admit_node(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool load);
  Result<void> admit_pdb(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool load);
  Result<void> admit_priority_class(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool load);
  Result<void> admit_namespace(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool load);
  Result<void> admit_workload(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool load);
  Result<void> admit_crd(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool load);
  Result<void> admit_secret(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool load);
  void after_write(const ResourceType& rt, const ObjectPtr& obj);
  void publish_root_ca(std::string_view ns);
  void after_delete(const ResourceType& rt, const ObjectPtr& obj, bool orphan);
  Result<void> register_crd(const Value& crd);
  void delete_namespace_contents(std::string_view ns);
  Result<ObjectPtr> delete_now(const ResourceType& rt, const ObjectPtr& obj, bool orphan);

  SimClock& clock_;
  ClusterOptions options_;
  std::string root_ca_pem_;
  WebhookCaller webhook_caller_;
  Registry registry_;
  Store store_;
  Faults faults_;
  std::mt19937_64 rng_;
  uint32_t next_node_ip_ = 1;  // InternalIP addresses of registered nodes: 10.0.0.1, 10.0.0.2, ...
  std::vector<std::string> budget_violations_;
  // Event deduplication: (object uid, type, reason, message) -> event key.
  std::map<std::string, std::string> event_keys_;
};

}  // namespace spotshift::kubesim
