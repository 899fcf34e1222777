#pragma once
// The kinds the operator watches beyond lib/kube's own: ReschedulePolicies, Namespaces (for
// namespaceSelector) and the workload controllers (ReplicaSets, StatefulSets, Jobs), with their
// typed-client traits.

#include "drain/policy.hpp"
#include "kube/client.hpp"
#include "model/meta.hpp"
#include "model/workload.hpp"

namespace spotshift::op {

inline const kube::Resource& policy_resource() {
  static const kube::Resource r{std::string(drain::kGroup), std::string(drain::kVersion), std::string(drain::kPlural),
                                std::string(drain::kKind), false};
  return r;
}

// A Namespace: only its name and labels matter.
struct NamespaceInfo {
  model::ObjectMeta meta;
  bool same_content(const NamespaceInfo& o) const { return meta.labels == o.meta.labels && meta.uid == o.meta.uid; }
};

inline Result<NamespaceInfo> decode_namespace(model::JsonReader& r) {
  model::JsonDecoder d("namespace");
  NamespaceInfo n;
  auto done = model::decode_object(d, r, n.meta, [](std::string_view) { return false; });
  if (!done) return done.error();
  return n;
}

// The workload controllers whose existence (and, for Jobs, podFailurePolicy) the drain checks:
// one type per kind, for an informer each.
template <char K>
struct Controller : model::WorkloadController {};
using ReplicaSetInfo = Controller<'r'>;
using StatefulSetInfo = Controller<'s'>;
using JobInfo = Controller<'j'>;

template <char K>
const kube::Resource& controller_resource() {
  static const kube::Resource r = K == 'r'   ? kube::Resource{"apps", "v1", "replicasets", "ReplicaSet", true}
                                  : K == 's' ? kube::Resource{"apps", "v1", "statefulsets", "StatefulSet", true}
                                             : kube::Resource{"batch", "v1", "jobs", "Job", true};
  return r;
}

}  // namespace spotshift::op

namespace spotshift::kube {

template <char K>
struct ResourceTraits<op::Controller<K>> {
  static const Resource& resource() { return op::controller_resource<K>(); }
  static Result<op::Controller<K>> read(model::JsonReader& r) {
    auto c = model::decode_workload_controller(r, resource().kind);
    if (!c) return c.error();
    op::Controller<K> out;
    static_cast<model::WorkloadController&>(out) = std::move(*c);
    return out;
  }
};

template <>
struct ResourceTraits<drain::ReschedulePolicy> {
  static const Resource& resource() { return op::policy_resource(); }
  static Result<drain::ReschedulePolicy> read(model::JsonReader& r) { return drain::decode_policy(r); }
};
template <>
struct ResourceTraits<op::NamespaceInfo> {
  static const Resource& resource() { return Resource::namespaces(); }
  static Result<op::NamespaceInfo> read(model::JsonReader& r) { return op::decode_namespace(r); }
};

}  // namespace spotshift::kube
