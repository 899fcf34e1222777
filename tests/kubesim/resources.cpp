#include "resources.hpp"

#include <algorithm>
#include <set>
#include <tuple>

namespace spotshift::kubesim {

bool ResourceType::has_subresource(std::string_view s) const {
  return std::find(subresources.begin(), subresources.end(), s) != subresources.end();
}

bool ResourceType::field_selectable(std::string_view field) const {
  if (field == "metadata.name") return true;
  if (field == "metadata.namespace") return namespaced;
  return std::find(selectable_fields.begin(), selectable_fields.end(), field) != selectable_fields.end();
}

namespace {
// Core kinds whose delete answers with the deleted object, as their apiserver storage does.
const std::set<std::string>& kReturnDeletedKinds() {
  static const std::set<std::string> kinds = {
      "pods", "namespaces", "services", "serviceaccounts", "persistentvolumes", "persistentvolumeclaims"};
  return kinds;
}
}  // namespace

Registry::Registry() {
  auto t = [](std::string group, std::string version, std::string plural, std::string singular, std::string kind, bool namespaced) {
    ResourceType r;
    r.group = std::move(group);
    r.version = std::move(version);
    r.plural = std::move(plural);
    r.singular = std::move(singular);
    r.kind = std::move(kind);
    r.namespaced = namespaced;
    return r;
  };
  {
    auto r = t("", "v1", "namespaces", "namespace", "Namespace", false);
    r.short_names = {"ns"};
    r.subresources = {"status"};
    r.status_subresource = true;
    r.selectable_fields = {"status.phase"};
    namespaces_ = add(std::move(r));
  }
  {
    auto r = t("", "v1", "nodes", "node", "Node", false);
    r.short_names = {"no"};
    r.subresources = {"status"};
    r.status_subresource = true;
    r.selectable_fields = {"spec.unschedulable"};
    nodes_ = add(std::move(r));
  }
  {
    auto r = t("", "v1", "pods", "pod", "Pod", true);
    r.short_names = {"po"};
    r.categories = {"all"};
    r.subresources = {"status", "eviction", "binding"};
    r.status_subresource = true;
    r.selectable_fields = {"spec.nodeName",    "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                           "spec.hostNetwork", "status.phase",       "status.podIP",       "status.nominatedNodeName"};
    pods_ = add(std::move(r));
  }
  {
    auto r = t("", "v1", "events", "event", "Event", true);
    r.short_names = {"ev"};
    r.selectable_fields = {"involvedObject.kind",
                           "involvedObject.namespace",
                           "involvedObject.name",
                           "involvedObject.uid",
                           "involvedObject.apiVersion",
                           "involvedObject.resourceVersion",
                           "involvedObject.fieldPath",
                           "reason",
                           "reportingComponent",
                           "source",
                           "type"};
    events_ = add(std::move(r));
  }
  {
    auto r = t("events.k8s.io", "v1", "events", "event", "Event", true);
    r.short_names = {"ev"};
    r.storage = events_;
    new_events_ = add(std::move(r));
  }
  {
    auto r = t("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", true);
    r.short_names = {"pdb"};
    r.subresources = {"status"};
    r.status_subresource = true;
    r.has_generation = true;
    pdbs_ = add(std::move(r));
  }
  leases_ = add(t("coordination.k8s.io", "v1", "leases", "lease", "Lease", true));
  // What `kubectl auth can-i` (with --list) and `kubectl auth whoami` ask.
  for (auto [group, plural, singular, kind] : std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectaccessreview", "SelfSubjectAccessReview"},
           {"authorization.k8s.io", "subjectaccessreviews", "subjectaccessreview", "SubjectAccessReview"},
           {"authorization.k8s.io", "selfsubjectrulesreviews", "selfsubjectrulesreview", "SelfSubjectRulesReview"},
           {"authentication.k8s.io", "selfsubjectreviews", "selfsubjectreview", "SelfSubjectReview"}}) {
    auto r = t(group, "v1", plural, singular, kind, false);
    r.review = true;
    add(std::move(r));
  }
  {
    auto r = t("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true);
    r.short_names = {"sa"};
    add(std::move(r));
  }
  {
    auto r = t("scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", false);
    r.short_names = {"pc"};
    add(std::move(r));
  }
  {
    auto r = t("", "v1", "configmaps", "configmap", "ConfigMap", true);
    r.short_names = {"cm"};
    add(std::move(r));
  }
  {
    auto r = t("", "v1", "secrets", "secret", "Secret", true);
    r.selectable_fields = {"type"};
    add(std::move(r));
  }
  add(t("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration",
        "MutatingWebhookConfiguration", false));
  {
    auto r = t("", "v1", "services", "service", "Service", true);
    r.short_names = {"svc"};
    r.categories = {"all"};
    r.subresources = {"status"};
    r.status_subresource = true;
    add(std::move(r));
  }
  for (auto [plural, singular, kind, namespaced] : std::vector<std::tuple<std::string, std::string, std::string, bool>>{
           {"roles", "role", "Role", true},
           {"rolebindings", "rolebinding", "RoleBinding", true},
           {"clusterroles", "clusterrole", "ClusterRole", false},
           {"clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false}})
    add(t("rbac.authorization.k8s.io", "v1", plural, singular, kind, namespaced));
  {
    auto r = t("", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", true);
    r.short_names = {"pvc"};
    r.subresources = {"status"};
    r.status_subresource = true;
    add(std::move(r));
  }
  {
    auto r = t("", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", false);
    r.short_names = {"pv"};
    r.subresources = {"status"};
    r.status_subresource = true;
    add(std::move(r));
  }
  auto workload = [&](std::string plural, std::string singular, std::string kind, std::vector<std::string> shorts) {
    auto r = t("apps", "v1", std::move(plural), std::move(singular), std::move(kind), true);
    r.short_names = std::move(shorts);
    r.categories = {"all"};
    r.subresources = {"status"};
    if (r.kind != "DaemonSet") r.subresources.push_back("scale");
    r.status_subresource = true;
    r.has_generation = true;
    return add(std::move(r));
  };
  deployments_ = workload("deployments", "deployment", "Deployment", {"deploy"});
  replicasets_ = workload("replicasets", "replicaset", "ReplicaSet", {"rs"});
  daemonsets_ = workload("daemonsets", "daemonset", "DaemonSet", {"ds"});
  statefulsets_ = workload("statefulsets", "statefulset", "StatefulSet", {"sts"});
  {
    // Served (for the operator's caches of Jobs), not run: no Job controller creates their pods.
    auto r = t("batch", "v1", "jobs", "job", "Job", true);
    r.categories = {"all"};
    r.subresources = {"status"};
    r.status_subresource = true;
    r.has_generation = true;
    add(std::move(r));
  }
  {
    auto r = t("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition", "CustomResourceDefinition", false);
    r.short_names = {"crd", "crds"};
    r.subresources = {"status"};
    r.status_subresource = true;
    r.has_generation = true;
    crds_ = add(std::move(r));
  }
}

const ResourceType* Registry::add(ResourceType t) {
  if (t.group.empty() && kReturnDeletedKinds().count(t.plural)) t.returns_deleted_object = true;
  types_.push_back(std::make_unique<ResourceType>(std::move(t)));
  return types_.back().get();
}

const ResourceType* Registry::find(std::string_view group, std::string_view version, std::string_view plural) const {
  for (const auto& t : types_)
    if (t->served && t->group == group && t->version == version && t->plural == plural) return t.get();
  return nullptr;
}

const ResourceType* Registry::find_any_version(std::string_view group, std::string_view plural) const {
  for (const auto& t : types_)
    if (t->served && t->group == group && t->plural == plural) return t.get();
  return nullptr;
}

const ResourceType* Registry::find_kind(std::string_view api_version, std::string_view kind) const {
  for (const auto& t : types_)
    if (t->served && t->group_version() == api_version && t->kind == kind) return t.get();
  return nullptr;
}

const ResourceType* Registry::upsert(ResourceType type) {
  for (auto& t : types_) {
    if (t->group == type.group && t->version == type.version && t->plural == type.plural) {
      // Keep the object at the same address: stored objects refer to it.
      *t = std::move(type);
      return t.get();
    }
  }
  return add(std::move(type));
}

void Registry::unserve(std::string_view group, std::string_view plural) {
  for (auto& t : types_)
    if (t->crd && t->group == group && t->plural == plural) t->served = false;
}

std::vector<const ResourceType*> Registry::all() const {
  std::vector<const ResourceType*> out;
  for (const auto& t : types_)
    if (t->served) out.push_back(t.get());
  return out;
}

std::vector<std::string> Registry::group_versions() const {
  std::vector<std::string> out;
  for (const auto& t : types_) {
    if (!t->served || t->group.empty()) continue;
    auto gv = t->group_version();
    if (std::find(out.begin(), out.end(), gv) == out.end()) out.push_back(gv);
  }
  return out;
}

}  // namespace spotshift::kubesim
