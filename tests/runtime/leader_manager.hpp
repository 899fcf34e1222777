#pragma once
// The manager options of a test instance that elects a leader on a Lease in the default
// namespace, shared by the runtime's end-to-end tests and the leader demo they start.

#include "runtime/manager.hpp"

#include <string>

namespace spotshift::runtime::testing {

// Metrics and probes at `address` ("0" turns them off), the Lease `lease`, this instance `identity`.
inline ManagerOptions leader_elected(std::string lease, std::string identity, const std::string& address) {
  ManagerOptions mo;
  mo.metrics_address = address;
  mo.probe_address = address;
  mo.leader_elect = true;
  mo.leader.namespace_ = "default";
  mo.leader.name = std::move(lease);
  mo.leader.identity = std::move(identity);
  return mo;
}

}  // namespace spotshift::runtime::testing
