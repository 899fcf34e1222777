#pragma once
// The kinds the operator watches beyond lib/kube's own: ReschedulePolicies and Namespaces (for
// namespaceSelector), with their typed-client traits.

#include "drain/policy.hpp"
#include "kube/client.hpp"
#include "model/meta.hpp"

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

inline Result<NamespaceInfo> decode_namespace(const model::JsonValue& v) {
  model::JsonDecoder d("namespace");
  NamespaceInfo n;
  model::decode_meta(d, v, n.meta, [](std::string_view, std::string_view) {});
  if (!d.ok()) return d.take_error();
  return n;
}

}  // namespace spotshift::op

namespace spotshift::kube {

template <>
struct ResourceTraits<drain::ReschedulePolicy> {
  static const Resource& resource() { return op::policy_resource(); }
  static Result<drain::ReschedulePolicy> decode(const model::JsonValue& v) { return drain::decode_policy(v); }
};
template <>
struct ResourceTraits<op::NamespaceInfo> {
  static const Resource& resource() { return Resource::namespaces(); }
  static Result<op::NamespaceInfo> decode(const model::JsonValue& v) { return op::decode_namespace(v); }
};

}  // namespace spotshift::kube
