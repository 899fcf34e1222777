#pragma once
// The steering webhook's configuration as the chart installs it, but calling the operator at its
// local URL (neither kubesim nor the test control plane routes to a Service); the operator fills
// its caBundle (--webhook-configuration spotshift-steering).

#include <fmt/format.h>

#include <string>

namespace spotshift::testing {

inline std::string steering_webhook_yaml(const std::string& port) {
  return fmt::format(R"yaml(apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {{name: spotshift-steering}}
webhooks:
- name: steering.spotshift.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  timeoutSeconds: 2
  clientConfig: {{url: "https://127.0.0.1:{}/mutate-pods"}}
  rules: [{{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods], scope: Namespaced}}]
  namespaceSelector:
    matchExpressions: [{{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}}]
  matchConditions:
  - name: has-a-controller
    expression: "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller)"
)yaml",
                     port);
}

// The operator's flags for it: the webhook on a free local port, a certificate for 127.0.0.1.
inline constexpr const char* kSteeringFlags =
    "--webhook-bind-address 127.0.0.1:0 --webhook-ip-addresses 127.0.0.1 --webhook-configuration spotshift-steering "
    "--webhook-secret default/spotshift-webhook-tls";

}  // namespace spotshift::testing
