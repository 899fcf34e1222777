#pragma once
// The simulator's resource registry: built-in resources and those CRDs register.

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spotshift::kubesim {

class Schema;

struct PrinterColumn {
  std::string name;
  std::string type;  // integer|number|string|boolean|date
  std::string format;
  std::string description;
  std::string json_path;
  int priority = 0;
};

struct ResourceType {
  std::string group;  // "" for core
  std::string version;
  std::string plural;
  std::string singular;
  std::string kind;
  bool namespaced = true;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> subresources;  // "status", "eviction", "binding"
  bool has_generation = false;            // metadata.generation bumps on spec changes
  bool status_subresource = false;        // main-resource writes keep the old status
  // A delete that removes the object answers with the object (the apiserver's
  // ReturnDeletedObject: pods, namespaces, services, service accounts, volumes and claims);
  // other kinds answer with a Success Status naming it.
  bool returns_deleted_object = false;
  bool crd = false;
  bool served = true;
  // Create-only and never stored: the answer is computed from the request (access reviews).
  bool review = false;
  // Fields a field selector may use beyond metadata.name and metadata.namespace.
  std::vector<std::string> selectable_fields;
  std::vector<PrinterColumn> columns;    // CRD additionalPrinterColumns
  std::shared_ptr<const Schema> schema;  // CRD openAPIV3Schema
  std::string schema_json;               // the same, as the CRD gave it (served at /openapi/v3)
  // events.k8s.io/v1 events are a view of the core events storage.
  const ResourceType* storage = nullptr;

  std::string group_version() const { return group.empty() ? version : group + "/" + version; }
  std::string list_kind() const { return kind + "List"; }
  // "pods" or "deployments.apps": how error messages name a resource.
  std::string qualified_plural() const { return group.empty() ? plural : plural + "." + group; }
  // "Pod" or "ReschedulePolicy.spotshift.io": how 422 messages name a kind.
  std::string qualified_kind() const { return group.empty() ? kind : kind + "." + group; }
  const ResourceType& stored() const { return storage ? *storage : *this; }
  bool has_subresource(std::string_view s) const;
  bool field_selectable(std::string_view field) const;
};

class Registry {
 public:
  Registry();
  const ResourceType* find(std::string_view group, std::string_view version, std::string_view plural) const;
  const ResourceType* find_kind(std::string_view api_version, std::string_view kind) const;
  const ResourceType* find_any_version(std::string_view group, std::string_view plural) const;
  // Adds or replaces a CRD-defined type; the pointer stays valid for the process lifetime.
  const ResourceType* upsert(ResourceType type);
  void unserve(std::string_view group, std::string_view plural);
  std::vector<const ResourceType*> all() const;
  // Group versions in discovery order.
  std::vector<std::string> group_versions() const;

  const ResourceType* pods() const { return pods_; }
  const ResourceType* nodes() const { return nodes_; }
  const ResourceType* namespaces() const { return namespaces_; }
  const ResourceType* events() const { return events_; }
  const ResourceType* new_events() const { return new_events_; }
  const ResourceType* pdbs() const { return pdbs_; }
  const ResourceType* leases() const { return leases_; }
  const ResourceType* replicasets() const { return replicasets_; }
  const ResourceType* deployments() const { return deployments_; }
  const ResourceType* daemonsets() const { return daemonsets_; }
  const ResourceType* statefulsets() const { return statefulsets_; }
  const ResourceType* crds() const { return crds_; }

 private:
  const ResourceType* add(ResourceType t);
  std::deque<std::unique_ptr<ResourceType>> types_;
  const ResourceType *pods_, *nodes_, *namespaces_, *events_, *new_events_, *pdbs_, *leases_, *replicasets_, *deployments_, *daemonsets_,
      *statefulsets_, *crds_;
};

}  // namespace spotshift::kubesim
