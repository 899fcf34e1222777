#pragma once
// A coordination.k8s.io/v1 Lease, decoded and encoded (leader election writes it whole).

#include "model/meta.hpp"

#include <optional>
#include <string>

namespace spotshift::model {

struct LeaseSpec {
  std::string holder_identity;
  std::optional<int32_t> lease_duration_seconds;
  std::optional<Time> acquire_time;
  std::optional<Time> renew_time;
  int32_t lease_transitions = 0;
  bool operator==(const LeaseSpec&) const = default;
};

struct Lease {
  ObjectMeta meta;
  LeaseSpec spec;
  bool operator==(const Lease&) const = default;
};

// The object r is at, read whole; or the one object of json.
Result<Lease> decode_lease(JsonReader& r);
Result<Lease> decode_lease(std::string_view json);
// The whole object as JSON, with metadata.resourceVersion when set (an update precondition).
std::string encode_lease(const Lease& lease);

}  // namespace spotshift::model
