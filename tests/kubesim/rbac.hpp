#pragma once
// RBAC authorization, as the API server's RBAC authorizer decides, from the cluster's own Role,
// ClusterRole, RoleBinding and ClusterRoleBinding objects. kubesim applies it to service-account
// users (system:serviceaccount:NS:NAME) so the operator can be run with exactly the chart's
// permissions; other users (the admin token, plain HTTP) are not restricted.

#include "resources.hpp"
#include "store.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace spotshift::kubesim {

struct UserInfo {
  std::string name;
  std::vector<std::string> groups;
  bool is_service_account() const { return name.starts_with("system:serviceaccount:"); }
  // Members of system:masters are never authorized against RBAC, as on a real API server.
  bool superuser() const { return std::find(groups.begin(), groups.end(), "system:masters") != groups.end(); }
};

// A service-account user's namespace and name (system:serviceaccount:NS:NAME; the name is empty
// when the user has no second part), or nothing for other users.
struct ServiceAccountName {
  std::string_view ns, name;
};
std::optional<ServiceAccountName> service_account_of(std::string_view user);

// The groups every authenticated service account has.
std::vector<std::string> service_account_groups(std::string_view user);

struct RequestAttributes {
  std::string verb;         // get, list, watch, create, update, patch, delete, deletecollection
  std::string api_group;    // "" for core
  std::string resource;     // plural
  std::string subresource;  // "" or "status", "eviction", ...
  std::string ns;           // "" at the cluster scope
  std::string name;         // "" for list, watch and create
};

// Whether the RBAC objects in `store` allow the request.
bool rbac_allows(const Store& store, const Registry& registry, const UserInfo& user, const RequestAttributes& a);

// Every rule the RBAC objects grant the user in namespace `ns` (ClusterRoleBindings, and the
// RoleBindings of `ns`), for SelfSubjectRulesReview. The values live in `store`'s objects.
std::vector<const Value*> rbac_rules(const Store& store, const Registry& registry, const UserInfo& user, std::string_view ns);

// The API server's Forbidden message: `pods "x" is forbidden: User "u" cannot create resource
// "pods/eviction" in API group "" in the namespace "default"`.
std::string forbidden_message(const UserInfo& user, const RequestAttributes& a);

}  // namespace spotshift::kubesim
