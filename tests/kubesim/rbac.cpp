#include "rbac.hpp"

#include "json_util.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spotshift::kubesim {

namespace {

bool contains(const Value* list, std::string_view want, bool star = true) {
  if (!list || !list->IsArray()) return false;
  for (const auto& v : list->GetArray()) {
    if (!v.IsString()) continue;
    std::string_view s(v.GetString(), v.GetStringLength());
    if (s == want || (star && s == "*")) return true;
  }
  return false;
}

bool resource_matches(const Value* resources, const RequestAttributes& a) {
  if (!resources || !resources->IsArray()) return false;
  std::string combined = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
  for (const auto& v : resources->GetArray()) {
    if (!v.IsString()) continue;
    std::string_view s(v.GetString(), v.GetStringLength());
    if (s == "*" || s == combined) return true;
    if (!a.subresource.empty() && s == "*/" + a.subresource) return true;
  }
  return false;
}

bool rule_allows(const Value& rule, const RequestAttributes& a) {
  if (!contains(json_member(rule, "verbs"), a.verb)) return false;
  if (!contains(json_member(rule, "apiGroups"), a.api_group)) return false;
  if (!resource_matches(json_member(rule, "resources"), a)) return false;
  const Value* names = json_member(rule, "resourceNames");
  if (names && names->IsArray() && !names->Empty()) return !a.name.empty() && contains(names, a.name, false);
  return true;
}

bool subject_matches(const Value& binding, const UserInfo& user) {
  const Value* subjects = json_member(binding, "subjects");
  if (!subjects || !subjects->IsArray()) return false;
  for (const auto& s : subjects->GetArray()) {
    std::string_view kind = json_string(s, {"kind"}), name = json_string(s, {"name"});
    if (kind == "User" && name == user.name) return true;
    if (kind == "Group" && std::find(user.groups.begin(), user.groups.end(), name) != user.groups.end()) return true;
    if (kind == "ServiceAccount" && user.name == fmt::format("system:serviceaccount:{}:{}", json_string(s, {"namespace"}), name))
      return true;
  }
  return false;
}

const ResourceType* rbac_type(const Registry& r, std::string_view plural) { return r.find("rbac.authorization.k8s.io", "v1", plural); }

// Calls f(rule) for each rule of the role; stops when f returns true, and says whether it did.
template <class F>
bool each_rule(const Store& store, const ResourceType* rt, const std::string& key, F&& f) {
  if (!rt) return false;
  auto role = store.get(*rt, key);
  const Value* rules = role ? json_member(role->doc, "rules") : nullptr;
  if (!rules || !rules->IsArray()) return false;
  for (const auto& rule : rules->GetArray())
    if (f(rule)) return true;
  return false;
}

// Calls f(rule) for each rule bound to the user (cluster-wide, then in `ns`) until f returns true.
template <class F>
bool each_bound_rule(const Store& store, const Registry& registry, const UserInfo& user, std::string_view ns, F&& f) {
  const ResourceType* cluster_roles = rbac_type(registry, "clusterroles");
  const ResourceType* roles = rbac_type(registry, "roles");
  if (const ResourceType* crb = rbac_type(registry, "clusterrolebindings"))
    for (const auto& [key, b] : store.objects(*crb)) {
      if (!subject_matches(b->doc, user)) continue;
      if (json_string(b->doc, {"roleRef", "kind"}) != "ClusterRole") continue;
      if (each_rule(store, cluster_roles, std::string(json_string(b->doc, {"roleRef", "name"})), f)) return true;
    }
  if (ns.empty()) return false;
  if (const ResourceType* rb = rbac_type(registry, "rolebindings"))
    for (const auto& [key, b] : store.objects(*rb)) {
      if (namespace_of(b->doc) != ns || !subject_matches(b->doc, user)) continue;
      std::string_view kind = json_string(b->doc, {"roleRef", "kind"}), name = json_string(b->doc, {"roleRef", "name"});
      if (kind == "ClusterRole" && each_rule(store, cluster_roles, std::string(name), f)) return true;
      if (kind == "Role" && each_rule(store, roles, fmt::format("{}/{}", ns, name), f)) return true;
    }
  return false;
}

}  // namespace

std::optional<ServiceAccountName> service_account_of(std::string_view user) {
  constexpr std::string_view prefix = "system:serviceaccount:";
  if (!user.starts_with(prefix)) return std::nullopt;
  auto rest = user.substr(prefix.size());
  auto colon = rest.find(':');
  if (colon == std::string_view::npos) return ServiceAccountName{rest, {}};
  return ServiceAccountName{rest.substr(0, colon), rest.substr(colon + 1)};
}

std::vector<std::string> service_account_groups(std::string_view user) {
  // In the apiserver's order.
  std::vector<std::string> groups = {"system:serviceaccounts"};
  if (auto sa = service_account_of(user)) groups.push_back(fmt::format("system:serviceaccounts:{}", sa->ns));
  groups.push_back("system:authenticated");
  return groups;
}

bool rbac_allows(const Store& store, const Registry& registry, const UserInfo& user, const RequestAttributes& a) {
  return each_bound_rule(store, registry, user, a.ns, [&](const Value& rule) { return rule_allows(rule, a); });
}

std::vector<const Value*> rbac_rules(const Store& store, const Registry& registry, const UserInfo& user, std::string_view ns) {
  std::vector<const Value*> out;
  each_bound_rule(store, registry, user, ns, [&](const Value& rule) {
    out.push_back(&rule);
    return false;
  });
  return out;
}

std::string forbidden_message(const UserInfo& user, const RequestAttributes& a) {
  std::string qualified = a.api_group.empty() ? a.resource : a.resource + "." + a.api_group;
  std::string subject = a.name.empty() ? qualified : fmt::format("{} \"{}\"", qualified, a.name);
  std::string resource = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
  std::string scope = a.ns.empty() ? "at the cluster scope" : fmt::format("in the namespace \"{}\"", a.ns);
  return fmt::format("{} is forbidden: User \"{}\" cannot {} resource \"{}\" in API group \"{}\" {}", subject, user.name, a.verb, resource,
                     a.api_group, scope);
}

}  // namespace spotshift::kubesim
