#pragma once
// DeleteOptions as kubectl sends them: JSON, query parameters, or the protobuf envelope
// ("k8s\0" + runtime.Unknown) that kubectl drain --disable-eviction uses.

#include "core/error.hpp"
#include "json_util.hpp"

#include <map>
#include <optional>
#include <string>

namespace spotshift::kubesim {

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;
  std::string precondition_uid;
  std::string precondition_resource_version;
  std::string propagation_policy;  // Background (default), Foreground, Orphan
  bool dry_run = false;
};

Result<DeleteOptions> decode_delete_options(std::string_view content_type, std::string_view body,
                                            const std::map<std::string, std::string>& query);

// A SelfSubjectAccessReview, SubjectAccessReview or SelfSubjectRulesReview sent as protobuf, as
// `kubectl auth can-i` does, decoded to its JSON form (spec only: resource or non-resource
// attributes, user, groups; the rules review's namespace).
Result<Doc> decode_review_protobuf(std::string_view body, std::string_view kind);

// Exposed for tests: decodes the protobuf envelope.
Result<DeleteOptions> decode_delete_options_protobuf(std::string_view body);

}  // namespace spotshift::kubesim
