#pragma once
// Mutating admission webhooks, as kube-apiserver's MutatingAdmissionWebhook plugin calls them on
// create: the MutatingWebhookConfigurations (admissionregistration.k8s.io/v1) whose rules match
// the request, in name order and each webhook in list order, filtered by namespaceSelector,
// objectSelector and matchConditions (CEL on `object`), called with an AdmissionReview v1 over
// HTTPS (clientConfig.url, verified with caBundle) within timeoutSeconds, the JSONPatch of each
// applied before the next is called; failurePolicy decides what a failed call does.
//
// Differences, documented in docs/kubesim.md: only CREATE is sent (the only operation the
// operator's webhook registers); clientConfig.service cannot be reached (no Service network), so
// such a call fails and its failurePolicy applies; reinvocationPolicy is not honoured; the
// request carries no userInfo. The call blocks the simulator for up to timeoutSeconds, as the
// API server's request handler waits.

#include "core/error.hpp"

#include <chrono>
#include <string>

namespace spotshift::kubesim {

// POSTs `body` (JSON) to an https:// URL, trusting `ca_pem` (the system's roots when empty),
// within `timeout`; the response body of a 200.
Result<std::string> post_webhook(const std::string& url, const std::string& ca_pem, const std::string& body,
                                 std::chrono::milliseconds timeout);

}  // namespace spotshift::kubesim
