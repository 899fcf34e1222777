// Per-kind defaults and validation: what the real apiserver's strategies and admission plugins
// do on create and update, for the kinds the simulator serves.

#include "cluster.hpp"
#include "schema.hpp"

#include "core/strings.hpp"
#include "model/meta.hpp"
#include "model/quantity.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace spotshift::kubesim {

void add_invalid(std::string_view value, const std::string& path, const std::vector<std::string>& errors,
                 std::vector<StatusCause>& causes) {
  for (const std::string& e : errors)
    causes.push_back({"FieldValueInvalid", path, fmt::format("Invalid value: {}: {}", json_quote(value), e)});
}

namespace {

bool has_toleration(const Value& tolerations, std::string_view key, std::string_view effect) {
  for (const auto& t : tolerations.GetArray())
    if (json_string(t, {"key"}) == key && (json_string(t, {"effect"}).empty() || json_string(t, {"effect"}) == effect)) return true;
  return false;
}

// DefaultTolerationSeconds admission: 300 s for not-ready and unreachable NoExecute taints.
void default_tolerations(Value& spec, Alloc& a) {
  Value& tols = ensure_array(spec, "tolerations", a);
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    if (has_toleration(tols, key, "NoExecute")) continue;
    Value t(rapidjson::kObjectType);
    set_str(t, "key", key, a);
    set_str(t, "operator", "Exists", a);
    set_str(t, "effect", "NoExecute", a);
    set_int(t, "tolerationSeconds", 300, a);
    tols.PushBack(t, a);
  }
}

// A resource with a limit but no request is requested at its limit.
void default_requests(Value& spec, Alloc& a) {
  for (const char* list : {"containers", "initContainers"}) {
    Value* cs = get_mut(spec, list);
    if (!cs || !cs->IsArray()) continue;
    for (auto& c : cs->GetArray()) {
      Value* res = get_mut(c, "resources");
      if (!res || !res->IsObject()) continue;
      const Value* limits = json_member(*res, "limits");
      if (!limits || !limits->IsObject()) continue;
      Value& requests = ensure_object(*res, "requests", a);
      for (auto it = limits->MemberBegin(); it != limits->MemberEnd(); ++it)
        if (!requests.HasMember(it->name)) requests.AddMember(copy_of(it->name, a), copy_of(it->value, a), a);
    }
  }
}

std::string qos_class(const Value& spec) {
  bool any = false, guaranteed = true;
  const Value* cs = json_member(spec, "containers");
  if (!cs || !cs->IsArray()) return "BestEffort";
  for (const auto& c : cs->GetArray()) {
    for (const char* r : {"cpu", "memory"}) {
      std::string_view req = json_string(c, {"resources", "requests", r});
      std::string_view lim = json_string(c, {"resources", "limits", r});
      if (!req.empty() || !lim.empty()) any = true;
      if (lim.empty() || (req != lim && !req.empty())) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

// The spec with the fields an update may change removed, for the immutability check.
void strip_mutable_pod_fields(Value& spec) {
  drop_field(spec, "activeDeadlineSeconds");
  drop_field(spec, "tolerations");
  drop_field(spec, "terminationGracePeriodSeconds");
  for (const char* list : {"containers", "initContainers"})
    if (Value* cs = get_mut(spec, list); cs && cs->IsArray())
      for (auto& c : cs->GetArray()) drop_field(c, "image");
}

// validateContainers and validateInitContainers, container by container: a name (an RFC 1123
// label, unique among the pod's containers, init containers included; a scenario's pods may
// leave it out), but no image (nothing runs one, and the tests' pods have none); then
// validateResourceRequirements: each limit, then each request, is a quantity, not negative, and
// whole for an extended resource; a request is at most its limit, and for a resource that cannot
// be overcommitted (extended resources, hugepages) has one, equal.
void check_containers(const Value& spec, bool load, std::vector<StatusCause>& causes) {
  // A quantity as written: a string, or a bare number.
  auto text_of = [](const Value& v) { return v.IsString() ? std::string(v.GetString()) : to_json(v); };
  auto extended = [](std::string_view resource) {
    return resource.find('/') != std::string_view::npos && resource.find("kubernetes.io/") == std::string_view::npos;
  };
  std::set<std::string_view> names;
  for (const char* list : {"containers", "initContainers"}) {
    const Value* cs = json_member(spec, list);
    if (!cs || !cs->IsArray()) continue;
    for (rapidjson::SizeType i = 0; i < cs->Size(); ++i) {
      const std::string container = fmt::format("spec.{}[{}]", list, i);
      const std::string_view name = json_string((*cs)[i], {"name"});
      if (name.empty() && !load) causes.push_back({"FieldValueRequired", container + ".name", "Required value"});
      if (!name.empty()) add_invalid(name, container + ".name", dns_name_errors(name, false), causes);
      if (!name.empty() && !names.insert(name).second)
        causes.push_back({"FieldValueDuplicate", container + ".name", fmt::format("Duplicate value: {}", json_quote(name))});
      const std::string at = container + ".resources";
      std::map<std::string, model::Quantity, std::less<>> limit_of;
      for (const char* kind : {"limits", "requests"}) {
        const Value* rl = json_path((*cs)[i], {"resources", kind});
        if (!rl || !rl->IsObject()) continue;
        for (auto it = rl->MemberBegin(); it != rl->MemberEnd(); ++it) {
          const std::string_view resource(it->name.GetString(), it->name.GetStringLength());
          const std::string field = fmt::format("{}.{}[{}]", at, kind, resource);
          const std::string text = text_of(it->value);
          auto q = model::Quantity::parse(text);
          if (!q) {
            causes.push_back({"FieldValueInvalid", field, fmt::format("Invalid value: {}: {}", json_quote(text), q.error().message)});
            continue;
          }
          if (q->sign() < 0)
            causes.push_back(
                {"FieldValueInvalid", field, fmt::format("Invalid value: \"{}\": must be greater than or equal to 0", q->to_string())});
          if (extended(resource) && q->milli_value() % 1000 != 0)
            causes.push_back({"FieldValueInvalid", field, fmt::format("Invalid value: \"{}\": must be an integer", q->to_string())});
          if (std::string_view(kind) == "limits") {
            limit_of.emplace(resource, *q);
            continue;
          }
          const bool overcommit = !extended(resource) && !resource.starts_with("hugepages-");
          if (auto limit = limit_of.find(resource); limit == limit_of.end()) {
            if (!overcommit)
              causes.push_back(
                  {"FieldValueRequired", at + ".limits", "Required value: Limit must be set for non overcommitable resources"});
          } else if (!overcommit && *q != limit->second) {
            causes.push_back({"FieldValueInvalid", at + ".requests",
                              fmt::format("Invalid value: \"{}\": must be equal to {} limit of {}", q->to_string(), resource,
                                          limit->second.to_string())});
          } else if (*q > limit->second) {
            causes.push_back({"FieldValueInvalid", at + ".requests",
                              fmt::format("Invalid value: \"{}\": must be less than or equal to {} limit of {}", q->to_string(), resource,
                                          limit->second.to_string())});
          }
        }
      }
    }
  }
}

// Sets v if absent or null (Go decodes null as the zero value, which the defaults replace).
void default_field(Value& obj, std::string_view key, Value v, Alloc& a) {
  if (const Value* given = json_member(obj, key); !given || given->IsNull()) set(obj, key, std::move(v), a);
}

// An update strategy field by field: the type defaults to RollingUpdate, and a rolling update's
// absent fields to theirs. Returns the strategy.
Value& default_strategy(Value& spec, std::string_view field, std::initializer_list<std::pair<std::string_view, Value>> fields, Alloc& a) {
  Value& strategy = ensure_object(spec, field, a);
  if (json_string(strategy, {"type"}).empty()) set_str(strategy, "type", "RollingUpdate", a);
  if (json_string(strategy, {"type"}) != "RollingUpdate") return strategy;
  Value& rolling = ensure_object(strategy, "rollingUpdate", a);
  for (const auto& [k, v] : fields) default_field(rolling, k, copy_of(v, a), a);
  return strategy;
}

// The apps/v1 defaults (SetDefaults_Deployment and friends) of the fields kubectl shows.
void default_workload(const ResourceType& rt, Value& spec, Alloc& a) {
  const std::string& kind = rt.kind;
  if (kind != "DaemonSet") default_field(spec, "replicas", Value(1), a);
  if (kind != "ReplicaSet") default_field(spec, "revisionHistoryLimit", Value(10), a);
  if (kind == "Deployment") {
    default_strategy(spec, "strategy", {{"maxUnavailable", json_key("25%")}, {"maxSurge", json_key("25%")}}, a);
    default_field(spec, "progressDeadlineSeconds", Value(600), a);
  } else if (kind == "DaemonSet") {
    Value& strategy = default_strategy(spec, "updateStrategy", {{"maxUnavailable", Value(1)}, {"maxSurge", Value(0)}}, a);
    // The internal type's bounds are not pointers: whatever the type, a rolling update comes
    // back with both, 0 where left out.
    if (Value* rolling = get_mut(strategy, "rollingUpdate"); rolling && rolling->IsObject())
      for (const char* bound : {"maxUnavailable", "maxSurge"}) default_field(*rolling, bound, Value(0), a);
  } else if (kind == "StatefulSet") {
    default_field(spec, "podManagementPolicy", json_key("OrderedReady"), a);
    // SetDefaults_StatefulSet: a rolling update is added only with the type, and its partition
    // (0) and maxUnavailable (1) defaulted whenever there is one.
    Value& strategy = ensure_object(spec, "updateStrategy", a);
    if (json_string(strategy, {"type"}).empty()) {
      set_str(strategy, "type", "RollingUpdate", a);
      ensure_object(strategy, "rollingUpdate", a);
    }
    if (Value* rolling = get_mut(strategy, "rollingUpdate");
        rolling && rolling->IsObject() && json_string(strategy, {"type"}) == "RollingUpdate")
      for (auto [field, value] : {std::pair{"partition", 0}, {"maxUnavailable", 1}}) default_field(*rolling, field, Value(value), a);
  }
}

// A metav1.LabelSelector as the API server quotes it in a message: JSON with its fields in
// declaration order, matchLabels' keys sorted, empty lists and maps left out; null when unset.
std::string go_label_selector(const Value* sel) {
  if (!sel || !sel->IsObject()) return "null";
  auto text = [](const Value* v) { return v && v->IsString() ? to_json(*v) : std::string(R"("")"); };
  std::vector<std::string> parts;
  if (const Value* ml = json_member(*sel, "matchLabels"); ml && ml->IsObject() && ml->MemberCount() > 0) {
    std::map<std::string, std::string> sorted;
    for (const auto& m : ml->GetObject()) sorted[m.name.GetString()] = to_json(m.value);
    std::vector<std::string> kv;
    for (const auto& [k, v] : sorted) kv.push_back(to_json(Value(rapidjson::StringRef(k.c_str()))) + ":" + v);
    parts.push_back(fmt::format(R"("matchLabels":{{{}}})", fmt::join(kv, ",")));
  }
  if (const Value* me = json_member(*sel, "matchExpressions"); me && me->IsArray() && me->Size() > 0) {
    std::vector<std::string> exprs;
    for (const auto& e : me->GetArray()) {
      std::string x = fmt::format(R"({{"key":{},"operator":{})", text(json_member(e, "key")), text(json_member(e, "operator")));
      if (const Value* vals = json_member(e, "values"); vals && vals->IsArray() && vals->Size() > 0) x += R"(,"values":)" + to_json(*vals);
      exprs.push_back(x + "}");
    }
    parts.push_back(fmt::format(R"("matchExpressions":[{}])", fmt::join(exprs, ",")));
  }
  return fmt::format("{{{}}}", fmt::join(parts, ","));
}

// The apiserver quotes an invalid PodDisruptionBudget spec as Go prints its internal type: the
// fields by their Go names in declaration order, the selector as JSON, null for what is unset.
std::string go_pdb_spec(const Value& spec) {
  auto json = [](const Value* v) { return v && !v->IsNull() ? to_json(*v) : std::string("null"); };
  return fmt::format(R"({{"MinAvailable":{},"Selector":{},"MaxUnavailable":{},"UnhealthyPodEvictionPolicy":{}}})",
                     json(json_member(spec, "minAvailable")), go_label_selector(json_member(spec, "selector")),
                     json(json_member(spec, "maxUnavailable")), json(json_member(spec, "unhealthyPodEvictionPolicy")));
}

// A field the API server decodes into an int32 (or an intstr.IntOrString, an int32 or a
// string): anything else is a 400, as its JSON decoder answers.
Error undecodable(std::string_view kind, std::string_view go_struct, std::string_view path, const Value& v) {
  const std::string what = v.IsNumber()   ? "number " + to_json(v)
                           : v.IsBool()   ? "bool"
                           : v.IsString() ? "string"
                           : v.IsArray()  ? "array"
                                          : "object";
  return Cluster::bad_request(
      fmt::format("{} in version \"v1\" cannot be handled as a {}: json: cannot unmarshal {} into Go struct field "
                  "{}.{} of type int32",
                  kind, kind, what, go_struct, path));
}

// An intstr.IntOrString member of obj (at prefix + field): nullptr when absent, and null is
// taken out (a field left out); 400 when it is neither an int32 nor a string.
Result<const Value*> int_or_string_field(Value& obj, std::string_view field, std::string_view kind, std::string_view go_struct,
                                         std::string_view prefix) {
  if (const Value* given = get_mut(obj, field); given && given->IsNull()) drop_field(obj, field);
  const Value* v = json_member(obj, field);
  if (v && !v->IsString() && !v->IsInt()) return undecodable(kind, go_struct, fmt::format("{}{}", prefix, field), *v);
  return v;
}

// Digits and '%', the form of a percentage the API server validates against ([0-9]+%).
bool percent_form(const Value& v) {
  if (!v.IsString()) return false;
  const std::string_view text(v.GetString(), v.GetStringLength());
  return text.size() >= 2 && text.back() == '%' && std::all_of(text.begin(), text.end() - 1, [](char c) { return c >= '0' && c <= '9'; });
}

// ValidatePositiveIntOrPercent: a non-negative integer, or a percentage.
void check_int_or_percent(const Value& v, const std::string& path, std::vector<StatusCause>& causes) {
  if (v.IsInt() && v.GetInt() < 0)
    causes.push_back({"FieldValueInvalid", path, fmt::format("Invalid value: {}: must be greater than or equal to 0", v.GetInt())});
  else if (v.IsString() && !percent_form(v))
    causes.push_back({"FieldValueInvalid", path,
                      fmt::format("Invalid value: {}: a valid percent string must be a numeric string followed by an ending '%' (e.g. "
                                  "'1%',  or '93%', regex used for validation is '[0-9]+%')",
                                  to_json(v))});
}

// IsNotMoreThan100Percent: only a percentage is looked at.
void check_at_most_100_percent(const Value& v, const std::string& path, std::vector<StatusCause>& causes) {
  if (!percent_form(v)) return;
  if (auto p = model::IntOrString::parse(std::string_view(v.GetString(), v.GetStringLength())); !p || p->value > 100)
    causes.push_back({"FieldValueInvalid", path, fmt::format("Invalid value: {}: must not be greater than 100%", to_json(v))});
}

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?: a label key's name part, and a non-empty label value.
bool label_form(std::string_view s) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  return !s.empty() && alnum(s.front()) && alnum(s.back()) &&
         std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

constexpr std::string_view kNamePartForm =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
    "or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

// IsQualifiedName, as a label key: an optional DNS subdomain prefix and '/', then a name part.
std::vector<std::string> label_key_errors(std::string_view key) {
  std::vector<std::string> out;
  std::string_view name = key;
  if (const size_t slash = key.find('/'); slash != std::string_view::npos) {
    if (key.find('/', slash + 1) != std::string_view::npos) {
      out.push_back(
          fmt::format("a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')", kNamePartForm));
      return out;
    }
    const std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty()) out.push_back("prefix part must be non-empty");
    else if (prefix.size() > 253) out.push_back("prefix part must be no more than 253 bytes");
    else
      for (const std::string& e : dns_name_errors(prefix, true)) out.push_back("prefix part " + e);
  }
  if (name.empty()) out.push_back("name part must be non-empty");
  else if (name.size() > 63) out.push_back("name part must be no more than 63 bytes");
  if (!label_form(name)) out.push_back(fmt::format("name part {}", kNamePartForm));
  return out;
}

// IsValidLabelValue.
std::vector<std::string> label_value_errors(std::string_view value) {
  std::vector<std::string> out;
  if (value.size() > 63) out.push_back("must be no more than 63 bytes");
  if (!value.empty() && !label_form(value))
    out.push_back(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
  return out;
}

// ValidateLabels: a map of label keys to label values (metadata.labels, a node selector, matchLabels).
void check_labels(const Value* labels, const std::string& path, std::vector<StatusCause>& causes) {
  if (!labels || !labels->IsObject()) return;
  for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
    const std::string_view key(it->name.GetString(), it->name.GetStringLength());
    add_invalid(key, path, label_key_errors(key), causes);
    if (it->value.IsString()) {
      const std::string_view value(it->value.GetString(), it->value.GetStringLength());
      add_invalid(value, path, label_value_errors(value), causes);
    }
  }
}

// A ConfigMap's or Secret's keys: IsConfigMapKey.
void check_data_keys(const Value& obj, std::vector<StatusCause>& causes) {
  for (const char* field : {"data", "binaryData", "stringData"}) {
    const Value* data = json_member(obj, field);
    if (!data || !data->IsObject()) continue;
    for (auto it = data->MemberBegin(); it != data->MemberEnd(); ++it) {
      const std::string_view key(it->name.GetString(), it->name.GetStringLength());
      const bool ok = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
      });
      if (!ok)
        add_invalid(key, fmt::format("{}[{}]", std::string_view(field) == "stringData" ? "data" : field, key),  // merged into data
                    {"a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
                     "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"},
                    causes);
    }
  }
}

// A list of quoted values, as field.NotSupported lists them.
std::string supported(std::initializer_list<std::string_view> values) {
  std::vector<std::string> quoted;
  for (auto v : values) quoted.push_back(fmt::format("\"{}\"", v));
  return fmt::format("supported values: {}", fmt::join(quoted, ", "));
}

// validateTaintEffect: one of the three effects; empty only where allowed.
void check_taint_effect(const Value& owner, const std::string& path, bool allow_empty, std::vector<StatusCause>& causes) {
  const std::string_view effect = json_string(owner, {"effect"});
  if (effect.empty()) {
    if (!allow_empty) causes.push_back({"FieldValueRequired", path, "Required value"});
    return;
  }
  if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute")
    causes.push_back(
        {"FieldValueNotSupported", path,
         fmt::format("Unsupported value: {}: {}", json_quote(effect), supported({"NoSchedule", "PreferNoSchedule", "NoExecute"}))});
}

// The matchExpressions of a label selector, or of a node selector term (which also has Gt and
// Lt), as ValidateLabelSelectorRequirement and validateNodeSelectorRequirement check them.
void check_requirements(const Value* expressions, const std::string& path, bool node, std::vector<StatusCause>& causes) {
  if (!expressions || !expressions->IsArray()) return;
  for (rapidjson::SizeType i = 0; i < expressions->Size(); ++i) {
    const Value& e = (*expressions)[i];
    const std::string at = fmt::format("{}[{}]", path, i);
    const std::string_view key = json_string(e, {"key"});
    const std::string_view op = json_string(e, {"operator"});
    const Value* values = json_member(e, "values");
    const size_t count = values && values->IsArray() ? values->Size() : 0;
    if (op == "In" || op == "NotIn") {
      if (count == 0)
        causes.push_back({"FieldValueRequired", at + ".values", "Required value: must be specified when `operator` is 'In' or 'NotIn'"});
    } else if (op == "Exists" || op == "DoesNotExist") {
      if (count > 0)
        causes.push_back(
            {"FieldValueForbidden", at + ".values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"});
    } else if (node && (op == "Gt" || op == "Lt")) {
      if (count != 1)
        causes.push_back(
            {"FieldValueRequired", at + ".values", "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"});
    } else {
      causes.push_back(
          {"FieldValueInvalid", at + ".operator", fmt::format("Invalid value: {}: not a valid selector operator", json_quote(op))});
    }
    add_invalid(key, at + ".key", label_key_errors(key), causes);
    if (values && values->IsArray())
      for (rapidjson::SizeType v = 0; v < values->Size(); ++v)
        if ((*values)[v].IsString()) {
          const std::string_view value((*values)[v].GetString(), (*values)[v].GetStringLength());
          add_invalid(value, fmt::format("{}.values[{}]", at, v), label_value_errors(value), causes);
        }
  }
}

// ValidateLabelSelector on spec.selector. Every cause it adds is also an error of
// LabelSelectorAsSelector: false then, the selector does not parse.
bool check_spec_selector(const Value& spec, std::vector<StatusCause>& causes) {
  const size_t before = causes.size();
  check_requirements(json_path(spec, {"selector", "matchExpressions"}), "spec.selector.matchExpressions", false, causes);
  check_labels(json_path(spec, {"selector", "matchLabels"}), "spec.selector.matchLabels", causes);
  return causes.size() == before;
}

// A pod's affinity: the node selector terms and the pod (anti-)affinity terms' label selectors.
void check_affinity(const Value& spec, std::vector<StatusCause>& causes) {
  const Value* affinity = json_member(spec, "affinity");
  if (!affinity) return;
  const std::string base = "spec.affinity";
  constexpr std::string_view kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
  constexpr std::string_view kPreferred = "preferredDuringSchedulingIgnoredDuringExecution";
  if (const Value* node = json_member(*affinity, "nodeAffinity")) {
    const std::string at = base + ".nodeAffinity";
    if (const Value* terms = json_path(*node, {kRequired, "nodeSelectorTerms"}); terms && terms->IsArray())
      for (rapidjson::SizeType i = 0; i < terms->Size(); ++i)
        check_requirements(json_member((*terms)[i], "matchExpressions"),
                           fmt::format("{}.{}.nodeSelectorTerms[{}].matchExpressions", at, kRequired, i), true, causes);
    if (const Value* preferred = json_member(*node, kPreferred); preferred && preferred->IsArray())
      for (rapidjson::SizeType i = 0; i < preferred->Size(); ++i)
        check_requirements(json_path((*preferred)[i], {"preference", "matchExpressions"}),
                           fmt::format("{}.{}[{}].preference.matchExpressions", at, kPreferred, i), true, causes);
  }
  for (std::string_view kind : {"podAffinity", "podAntiAffinity"}) {
    const Value* pod = json_member(*affinity, kind);
    if (!pod) continue;
    const std::string at = fmt::format("{}.{}", base, kind);
    if (const Value* required = json_member(*pod, kRequired); required && required->IsArray())
      for (rapidjson::SizeType i = 0; i < required->Size(); ++i)
        check_requirements(json_path((*required)[i], {"labelSelector", "matchExpressions"}),
                           fmt::format("{}.{}[{}].labelSelector.matchExpressions", at, kRequired, i), false, causes);
    if (const Value* preferred = json_member(*pod, kPreferred); preferred && preferred->IsArray())
      for (rapidjson::SizeType i = 0; i < preferred->Size(); ++i)
        check_requirements(json_path((*preferred)[i], {"podAffinityTerm", "labelSelector", "matchExpressions"}),
                           fmt::format("{}.{}[{}].podAffinityTerm.labelSelector.matchExpressions", at, kPreferred, i), false, causes);
  }
}

// ValidateTolerations, but for the syntax of keys and values.
void check_tolerations(const Value& spec, std::vector<StatusCause>& causes) {
  const Value* tolerations = json_member(spec, "tolerations");
  if (!tolerations || !tolerations->IsArray()) return;
  for (rapidjson::SizeType i = 0; i < tolerations->Size(); ++i) {
    const Value& t = (*tolerations)[i];
    const std::string at = fmt::format("spec.tolerations[{}]", i);
    const std::string_view key = json_string(t, {"key"}), op = json_string(t, {"operator"}), effect = json_string(t, {"effect"});
    if (key.empty() && op != "Exists")
      causes.push_back({"FieldValueInvalid", at + ".operator",
                        fmt::format("Invalid value: {}: operator must be Exists when `key` is empty, which means \"match all values "
                                    "and all keys\"",
                                    json_quote(op))});
    if (json_member(t, "tolerationSeconds") && effect != "NoExecute")
      causes.push_back({"FieldValueInvalid", at + ".effect",
                        fmt::format("Invalid value: {}: effect must be 'NoExecute' when `tolerationSeconds` is set", json_quote(effect))});
    if (op == "Exists") {
      if (const std::string_view value = json_string(t, {"value"}); !value.empty())
        causes.push_back({"FieldValueInvalid", at + ".operator",
                          fmt::format("Invalid value: {}: value must be empty when `operator` is 'Exists'", json_quote(value))});
    } else if (!op.empty() && op != "Equal") {
      causes.push_back({"FieldValueNotSupported", at + ".operator",
                        fmt::format("Unsupported value: {}: {}", json_quote(op), supported({"Equal", "Exists"}))});
    }
    check_taint_effect(t, at + ".effect", true, causes);
  }
}

// validateNodeTaints: every effect given and known; one taint per key and effect.
void check_node_taints(const Value& node, std::vector<StatusCause>& causes) {
  const Value* taints = json_path(node, {"spec", "taints"});
  if (!taints || !taints->IsArray()) return;
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (rapidjson::SizeType i = 0; i < taints->Size(); ++i) {
    const Value& t = (*taints)[i];
    const std::string at = fmt::format("metadata.taints[{}]", i);  // sic: the API server's path
    check_taint_effect(t, at + ".effect", false, causes);
    const std::string_view key = json_string(t, {"key"}), effect = json_string(t, {"effect"});
    if (!seen.insert({key, effect}).second) {
      const Value* added = json_member(t, "timeAdded");
      causes.push_back(
          {"FieldValueDuplicate", at,
           fmt::format(R"(Duplicate value: {{"Key":{},"Value":{},"Effect":{},"TimeAdded":{}}}: taints must be unique by key and )"
                       "effect pair",
                       json_quote(key), json_quote(json_string(t, {"value"})), json_quote(effect), added ? to_json(*added) : "null")});
    }
  }
}

// getIntOrPercentValue: the integer, or the digits before a '%'; 0 for what is absent or does
// not parse.
int64_t int_or_percent_value(const Value* v) {
  if (!v || v->IsInt()) return v ? v->GetInt() : 0;
  std::string_view text(v->GetString(), v->GetStringLength());
  if (text.ends_with('%')) text.remove_suffix(1);
  return parse_int(text).value_or(0);
}

// A Deployment's strategy (ValidateDeploymentStrategy) or a DaemonSet's updateStrategy
// (ValidateDaemonSetUpdateStrategy): a known type; for a Deployment, a rolling update only with
// RollingUpdate; and the rolling update's bounds, each a non-negative integer or percentage. A
// Deployment's maxUnavailable is at most 100 % and not 0 with maxSurge 0; a DaemonSet's bounds
// are both at most 100 % and exactly one is not 0.
Result<void> check_strategy(const std::string& kind, Value& spec, std::vector<StatusCause>& causes) {
  const bool deployment = kind == "Deployment";
  const std::string field = deployment ? "strategy" : "updateStrategy";
  Value* strategy = get_mut(spec, field);
  if (!strategy || !strategy->IsObject()) return {};
  Value* rolling = get_mut(*strategy, "rollingUpdate");
  if (rolling && !rolling->IsObject()) rolling = nullptr;
  const std::string prefix = fmt::format("spec.{}.rollingUpdate.", field);
  const Value *unavailable = nullptr, *surge = nullptr;
  if (rolling) {
    const std::string_view go_struct = deployment ? "RollingUpdateDeployment" : "RollingUpdateDaemonSet";
    auto u = int_or_string_field(*rolling, "maxUnavailable", kind, go_struct, prefix);
    if (!u) return u.error();
    auto s = int_or_string_field(*rolling, "maxSurge", kind, go_struct, prefix);
    if (!s) return s.error();
    unavailable = *u;
    surge = *s;
  }
  const std::string_view type = json_string(*strategy, {"type"});
  if (type == (deployment ? "Recreate" : "OnDelete")) {
    if (rolling && deployment)
      causes.push_back({"FieldValueForbidden", prefix.substr(0, prefix.size() - 1),
                        "Forbidden: may not be specified when strategy `type` is 'Recreate'"});
    return {};
  }
  if (type != "RollingUpdate") {
    // Quoted as Go marshals the internal type: fields by their Go names, an absent bound as 0.
    auto bound = [](const Value* v) { return v ? to_json(*v) : std::string("0"); };
    const std::string rolling_go =
        rolling ? fmt::format(R"({{"MaxUnavailable":{},"MaxSurge":{}}})", bound(unavailable), bound(surge)) : "null";
    causes.push_back({"FieldValueNotSupported", "spec." + field,
                      fmt::format(R"(Unsupported value: {{"Type":{},"RollingUpdate":{}}}: {})", json_quote(type), rolling_go,
                                  deployment ? supported({"Recreate", "RollingUpdate"}) : supported({"RollingUpdate", "OnDelete"}))});
    return {};
  }
  if (!rolling) return {};  // defaulted
  const std::string unavailable_path = prefix + "maxUnavailable", surge_path = prefix + "maxSurge";
  if (unavailable) check_int_or_percent(*unavailable, unavailable_path, causes);
  if (surge) check_int_or_percent(*surge, surge_path, causes);
  const bool has_unavailable = int_or_percent_value(unavailable) != 0, has_surge = int_or_percent_value(surge) != 0;
  if (deployment) {
    if (unavailable && surge && !has_unavailable && !has_surge)
      causes.push_back({"FieldValueInvalid", unavailable_path,
                        fmt::format("Invalid value: {}: may not be 0 when `maxSurge` is 0", to_json(*unavailable))});
    if (unavailable) check_at_most_100_percent(*unavailable, unavailable_path, causes);
    return {};
  }
  if (unavailable) check_at_most_100_percent(*unavailable, unavailable_path, causes);
  if (surge) check_at_most_100_percent(*surge, surge_path, causes);
  if (has_unavailable && has_surge)
    causes.push_back({"FieldValueInvalid", surge_path,
                      fmt::format("Invalid value: {}: may not be set when maxUnavailable is non-zero", to_json(*surge))});
  else if (!has_unavailable && !has_surge)
    causes.push_back({"FieldValueRequired", unavailable_path, "Required value: cannot be 0 when maxSurge is 0"});
  return {};
}

// ValidateStatefulSetUpdateStrategy: a known type, a rolling update only with RollingUpdate, its
// partition not negative and its maxUnavailable a positive integer or percentage of at most 100 %.
Result<void> check_stateful_strategy(Value& spec, std::vector<StatusCause>& causes) {
  Value* strategy = get_mut(spec, "updateStrategy");
  if (!strategy || !strategy->IsObject()) return {};
  Value* rolling = get_mut(*strategy, "rollingUpdate");
  if (rolling && !rolling->IsObject()) rolling = nullptr;
  const std::string path = "spec.updateStrategy.rollingUpdate";
  const Value *partition = nullptr, *unavailable = nullptr;
  if (rolling) {
    if (Value* given = get_mut(*rolling, "partition"); given && given->IsNull()) drop_field(*rolling, "partition");
    partition = json_member(*rolling, "partition");
    if (partition && !partition->IsInt())
      return undecodable("StatefulSet", "RollingUpdateStatefulSetStrategy", path + ".partition", *partition);
    auto u = int_or_string_field(*rolling, "maxUnavailable", "StatefulSet", "RollingUpdateStatefulSetStrategy", path + ".");
    if (!u) return u.error();
    unavailable = *u;
  }
  // Quoted as Go marshals the internal type: its partition is not a pointer.
  auto rolling_go = [&] {
    return rolling ? fmt::format(R"({{"Partition":{},"MaxUnavailable":{}}})", partition ? partition->GetInt() : 0,
                                 unavailable ? to_json(*unavailable) : "null")
                   : std::string("null");
  };
  const std::string_view type = json_string(*strategy, {"type"});
  if (type == "OnDelete") {
    if (rolling)
      causes.push_back(
          {"FieldValueInvalid", path, fmt::format("Invalid value: {}: only allowed for updateStrategy 'RollingUpdate'", rolling_go())});
    return {};
  }
  if (type != "RollingUpdate") {
    causes.push_back({"FieldValueInvalid", "spec.updateStrategy",
                      fmt::format(R"(Invalid value: {{"Type":{},"RollingUpdate":{}}}: must be 'RollingUpdate' or 'OnDelete')",
                                  json_quote(type), rolling_go())});
    return {};
  }
  if (partition && partition->GetInt() < 0)
    causes.push_back({"FieldValueInvalid", path + ".partition",
                      fmt::format("Invalid value: {}: must be greater than or equal to 0", partition->GetInt())});
  if (unavailable) {
    const std::string at = path + ".maxUnavailable";
    check_int_or_percent(*unavailable, at, causes);
    if (int_or_percent_value(unavailable) == 0)
      causes.push_back({"FieldValueInvalid", at, fmt::format("Invalid value: {}: cannot be 0", to_json(*unavailable))});
    check_at_most_100_percent(*unavailable, at, causes);
  }
  return {};
}

// What ValidateDeploymentSpec and its siblings check of the fields the simulator acts on: the
// replica count, the selector (required, not empty, valid, matching the template's labels) and,
// for a Deployment or a DaemonSet, its update strategy.
Result<void> validate_workload(const ResourceType& rt, const std::string& name, Value& spec) {
  const std::string& kind = rt.kind;
  std::vector<StatusCause> causes;
  if (const Value* replicas = json_member(spec, "replicas"); replicas && kind != "DaemonSet") {
    if (!replicas->IsInt()) return undecodable(kind, kind + "Spec", "spec.replicas", *replicas);
    if (replicas->GetInt() < 0)
      causes.push_back(
          {"FieldValueInvalid", "spec.replicas", fmt::format("Invalid value: {}: must be greater than or equal to 0", replicas->GetInt())});
  }
  // The selector is validated, then parsed: one that does not parse is "invalid", and only one
  // that does (or none) is matched against the template's labels.
  const Value* selector = json_member(spec, "selector");
  const bool valid_selector = !selector || check_spec_selector(spec, causes);
  const auto parsed = valid_selector ? label_selector_of(spec, "selector") : std::nullopt;
  if (!selector) {
    causes.push_back({"FieldValueRequired", "spec.selector", "Required value"});
  } else if (parsed && parsed->empty()) {
    // ValidateReplicaSetSpec says "deployment" too.
    causes.push_back(
        {"FieldValueInvalid", "spec.selector",
         fmt::format("Invalid value: {{}}: empty selector is invalid for {}", kind == "ReplicaSet" ? "deployment" : rt.singular)});
  } else if (!parsed && kind != "DaemonSet") {
    // ValidateDaemonSetSpec says nothing more; ValidateStatefulSetSpec gives no detail.
    causes.push_back(
        {"FieldValueInvalid", "spec.selector",
         fmt::format("Invalid value: {}{}", go_label_selector(selector), kind == "StatefulSet" ? "" : ": invalid label selector")});
  }
  if (!selector || (parsed && !parsed->empty())) {
    const Value* tmpl = json_member(spec, "template");
    if (tmpl && (!parsed || !parsed->matches(labels_of(*tmpl)))) {
      const Value* labels = json_path(*tmpl, {"metadata", "labels"});
      causes.push_back({"FieldValueInvalid", "spec.template.metadata.labels",
                        fmt::format("Invalid value: {}: `selector` does not match template `labels`",
                                    labels && labels->IsObject() ? canonical_json(*labels) : "null")});
    }
  }
  if (kind == "Deployment" || kind == "DaemonSet")
    if (auto checked = check_strategy(kind, spec, causes); !checked) return checked.error();
  if (kind == "StatefulSet")
    if (auto checked = check_stateful_strategy(spec, causes); !checked) return checked.error();
  if (!causes.empty()) return Cluster::invalid(rt, name, std::move(causes));
  return {};
}

}  // namespace

void check_metadata_labels(const Value& obj, std::vector<StatusCause>& causes) {
  check_labels(json_path(obj, {"metadata", "labels"}), "metadata.labels", causes);
}

// ValidateEventCreate for events.k8s.io/v1, in its order: the namespaces agree; a new event (one
// with an eventTime) names its reporting controller (a qualified name) and instance, an action
// and a reason (each at most 128 bytes), and has a note of at most 1024 bytes; then an eventTime
// and a type of Normal or Warning.
Result<void> validate_new_event(const ResourceType& rt, std::string_view ns, const Value& event) {
  std::vector<StatusCause> causes;
  // The object it is about is in the event's namespace; one without a namespace (a Node) only
  // with an event in "default" (or none).
  const std::string_view about = json_string(event, {"regarding", "namespace"});
  if (about.empty() ? !ns.empty() && ns != "default" : about != ns)
    causes.push_back({"FieldValueInvalid", "involvedObject.namespace",
                      fmt::format("Invalid value: {}: does not match event.namespace", json_quote(about))});
  const bool has_time = !json_string(event, {"eventTime"}).empty();
  auto bounded = [&](std::string_view field, size_t most, bool required) {
    const std::string_view v = json_string(event, {field});
    if (required && v.empty()) causes.push_back({"FieldValueRequired", std::string(field), "Required value"});
    if (v.size() > most)
      causes.push_back({"FieldValueInvalid", std::string(field == "note" ? "message" : field),
                        fmt::format(R"(Invalid value: "": can have at most {} characters)", most)});
  };
  if (has_time) {
    const std::string_view controller = json_string(event, {"reportingController"});
    if (controller.empty()) causes.push_back({"FieldValueRequired", "reportingController", "Required value"});
    add_invalid(controller, "reportingController", label_key_errors(controller), causes);
    bounded("reportingInstance", 128, true);
    bounded("action", 128, true);
    bounded("reason", 128, true);
    bounded("note", 1024, false);
  } else {
    causes.push_back({"FieldValueRequired", "eventTime", "Required value"});
  }
  if (const std::string_view type = json_string(event, {"type"}); type != "Normal" && type != "Warning")
    causes.push_back({"FieldValueInvalid", "type", fmt::format(R"(Invalid value: "": has invalid value: {})", type)});
  if (!causes.empty()) return Cluster::invalid(rt, name_of(event), std::move(causes));
  return {};
}

// Admission by kind, as the API server's registry strategies and admission plugins default and
// validate each (the group and kind of a resource type; kinds not listed are stored as given).
Result<void> Cluster::admit(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool load) {
  using Admit = Result<void> (Cluster::*)(const ResourceType&, Value&, Alloc&, const Value*, bool);
  static const std::map<std::pair<std::string_view, std::string_view>, Admit> kByKind = {
      {{"", "Pod"}, &Cluster::admit_pod},
      {{"", "Node"}, &Cluster::admit_node},
      {{"", "Namespace"}, &Cluster::admit_namespace},
      {{"", "Secret"}, &Cluster::admit_secret},
      {{"policy", "PodDisruptionBudget"}, &Cluster::admit_pdb},
      {{"scheduling.k8s.io", "PriorityClass"}, &Cluster::admit_priority_class},
      {{"apps", "Deployment"}, &Cluster::admit_workload},
      {{"apps", "ReplicaSet"}, &Cluster::admit_workload},
      {{"apps", "StatefulSet"}, &Cluster::admit_workload},
      {{"apps", "DaemonSet"}, &Cluster::admit_workload},
      {{"apiextensions.k8s.io", "CustomResourceDefinition"}, &Cluster::admit_crd},
  };
  // What ValidateObjectMeta checks of every kind (the name is checked on create), and the keys of
  // a ConfigMap or Secret.
  std::vector<StatusCause> causes;
  check_metadata_labels(obj, causes);
  if (rt.group.empty() && (rt.kind == "ConfigMap" || rt.kind == "Secret")) check_data_keys(obj, causes);
  if (!causes.empty()) return invalid(rt, std::string(name_of(obj)), std::move(causes));
  auto it = kByKind.find({std::string_view(rt.group), std::string_view(rt.kind)});
  return it == kByKind.end() ? Result<void>{} : (this->*(it->second))(rt, obj, a, old, load);
}

Result<void> Cluster::admit_pod(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool load) {
  const std::string name(name_of(obj));
  Value* spec = get_mut(obj, "spec");
  if (!spec || !spec->IsObject()) return invalid(rt, name, {{"FieldValueRequired", "spec", "Required value"}});
  const Value* containers = json_member(*spec, "containers");
  if (!containers || !containers->IsArray() || containers->Size() == 0)
    return invalid(rt, name, {{"FieldValueRequired", "spec.containers", "Required value"}});
  std::vector<StatusCause> causes;
  check_containers(*spec, load, causes);
  check_labels(json_member(*spec, "nodeSelector"), "spec.nodeSelector", causes);
  check_affinity(*spec, causes);
  check_tolerations(*spec, causes);
  if (!causes.empty()) return invalid(rt, name, std::move(causes));
  if (old) {
    Value a_spec, b_spec;
    if (const Value* os = json_member(*old, "spec")) a_spec.CopyFrom(*os, a);
    b_spec.CopyFrom(*spec, a);
    strip_mutable_pod_fields(a_spec);
    strip_mutable_pod_fields(b_spec);
    if (!json_equal(a_spec, b_spec))
      return invalid(rt, name,
                     {{"FieldValueForbidden", "spec",
                       "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
                       "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
                       "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
                       "to 1 if it was previously negative)"}});
    return {};
  }
  if (json_string(*spec, {"schedulerName"}).empty()) set_str(*spec, "schedulerName", "default-scheduler", a);
  if (!json_member(*spec, "terminationGracePeriodSeconds")) set_int(*spec, "terminationGracePeriodSeconds", 30, a);
  if (json_string(*spec, {"restartPolicy"}).empty()) set_str(*spec, "restartPolicy", "Always", a);
  if (json_string(*spec, {"dnsPolicy"}).empty()) set_str(*spec, "dnsPolicy", "ClusterFirst", a);
  // Priority admission: the priority comes from the pod's PriorityClass (the system classes, a
  // class the cluster has, or the one marked globalDefault), never from the pod itself. A
  // scenario loads pods as given.
  std::string pc(json_string(*spec, {"priorityClassName"}));
  std::optional<int64_t> priority;
  if (pc == "system-node-critical") priority = 2000001000;
  else if (pc == "system-cluster-critical") priority = 2000000000;
  const ResourceType* classes = registry_.find("scheduling.k8s.io", "v1", "priorityclasses");
  if (!priority && classes) {
    for (const auto& [key, c] : store_.objects(*classes))
      if (pc.empty() ? json_bool(c->doc, {"globalDefault"}) : name_of(c->doc) == pc) {
        priority = json_int(c->doc, {"value"}).value_or(0);
        if (pc.empty()) pc = std::string(name_of(c->doc));
        break;
      }
    if (!priority && !pc.empty() && !load)
      return Error::api(403, "Forbidden", fmt::format("pods \"{}\" is forbidden: no PriorityClass with name {} was found", name, pc));
  }
  if (const auto given = json_int(*spec, {"priority"}); given && !load && *given != priority.value_or(0))
    return Error::api(403, "Forbidden",
                      fmt::format("pods \"{}\" is forbidden: the integer value of priority ({}) must not be provided in pod spec; "
                                  "priority admission controller computed {} from the given PriorityClass name",
                                  name, *given, priority.value_or(0)));
  if (!json_member(*spec, "priority")) set_int(*spec, "priority", priority.value_or(0), a);
  if (!pc.empty() && json_string(*spec, {"priorityClassName"}).empty()) set_str(*spec, "priorityClassName", pc, a);
  default_requests(*spec, a);
  default_tolerations(*spec, a);
  Value& status = ensure_object(obj, "status", a);
  if (!load || json_string(status, {"phase"}).empty()) set_str(status, "phase", "Pending", a);
  set_str(status, "qosClass", qos_class(*spec), a);
  return {};
}

Result<void> Cluster::admit_node(const ResourceType& rt, Value& obj, Alloc& a, const Value* old, bool /*load*/) {
  const std::string name(name_of(obj));
  std::vector<StatusCause> causes;
  check_node_taints(obj, causes);
  if (!causes.empty()) return invalid(rt, name, std::move(causes));
  if (old) return {};  // the simulated kubelet registers a node once
  // The simulated kubelet registers its node Ready, with allocatable defaulting to capacity.
  Value& st = ensure_object(obj, "status", a);
  if (!json_member(st, "allocatable"))
    if (const Value* cap = json_member(st, "capacity")) set(st, "allocatable", copy_of(*cap, a), a);
  const Value* conds = json_member(st, "conditions");
  if (!conds || !conds->IsArray() || conds->Empty()) {
    Value list(rapidjson::kArrayType);
    for (auto [type, status] :
         {std::pair{"MemoryPressure", "False"}, {"DiskPressure", "False"}, {"PIDPressure", "False"}, {"Ready", "True"}}) {
      Value c(rapidjson::kObjectType);
      set_str(c, "type", type, a);
      set_str(c, "status", status, a);
      set_str(c, "lastHeartbeatTime", format_time(now()), a);
      set_str(c, "lastTransitionTime", format_time(now()), a);
      set_str(c, "reason", std::string_view(type) == "Ready" ? "KubeletReady" : "KubeletHasSufficientResources", a);
      list.PushBack(c, a);
    }
    set(st, "conditions", std::move(list), a);
  }
  if (!json_member(st, "addresses")) {
    uint32_t n = next_node_ip_++;
    Value list(rapidjson::kArrayType);
    for (auto [type, address] :
         {std::pair<std::string_view, std::string>{"InternalIP", fmt::format("10.0.{}.{}", (n >> 8) & 255, n & 255)}, {"Hostname", name}}) {
      Value addr(rapidjson::kObjectType);
      set_str(addr, "type", type, a);
      set_str(addr, "address", address, a);
      list.PushBack(addr, a);
    }
    set(st, "addresses", std::move(list), a);
  }
  // What the kubelet reports about itself; these nodes say they are simulated.
  Value& info = ensure_object(st, "nodeInfo", a);
  for (auto [key, value] : {std::pair{"kubeletVersion", "v1.32.0"},
                            {"kubeProxyVersion", "v1.32.0"},
                            {"osImage", "kubesim simulated node"},
                            {"kernelVersion", "none (simulated)"},
                            {"containerRuntimeVersion", "kubesim://1"},
                            {"operatingSystem", "linux"},
                            {"architecture", "amd64"}})
    if (json_string(info, {key}).empty()) set_str(info, key, value, a);
  // Identifiers a kubelet always reports (strict clients, such as the official Python client,
  // require them): stable per node name.
  for (auto [key, prefix] : {std::pair{"machineID", "machine-"}, {"systemUUID", "uuid-"}, {"bootID", "boot-"}})
    if (json_string(info, {key}).empty()) set_str(info, key, std::string(prefix) + name, a);
  return {};
}

Result<void> Cluster::admit_pdb(const ResourceType& rt, Value& obj, Alloc& /*a*/, const Value* /*old*/, bool /*load*/) {
  const std::string name(name_of(obj));
  Value* spec = get_mut(obj, "spec");
  if (!spec || !spec->IsObject()) return {};
  std::vector<std::pair<std::string_view, const Value*>> set;
  for (std::string_view field : {"minAvailable", "maxUnavailable"}) {
    auto v = int_or_string_field(*spec, field, "PodDisruptionBudget", "PodDisruptionBudgetSpec", "spec.");
    if (!v) return v.error();
    if (*v) set.emplace_back(field, *v);
  }
  std::vector<StatusCause> causes;
  if (set.size() == 2)
    causes.push_back({"FieldValueInvalid", "spec",
                      fmt::format("Invalid value: {}: minAvailable and maxUnavailable cannot be both set", go_pdb_spec(*spec))});
  for (const auto& [field, v] : set) {
    const std::string path = fmt::format("spec.{}", field);
    check_int_or_percent(*v, path, causes);
    check_at_most_100_percent(*v, path, causes);
  }
  check_spec_selector(*spec, causes);
  if (!causes.empty()) return invalid(rt, name, std::move(causes));
  return {};
}

// ValidatePriorityClass: 'system-' names are the system's, a user's value is at most 10^9, and
// preemptionPolicy (default PreemptLowerPriority) is one of two.
Result<void> Cluster::admit_priority_class(const ResourceType& rt, Value& obj, Alloc& a, const Value* /*old*/, bool /*load*/) {
  const std::string name(name_of(obj));
  const Value* value = json_member(obj, "value");
  if (value && !value->IsInt()) return undecodable("PriorityClass", "PriorityClass", "value", *value);
  std::vector<StatusCause> causes;
  constexpr int64_t kHighestUserDefinable = 1000000000;
  if (name.starts_with("system-")) {
    if (name != "system-node-critical" && name != "system-cluster-critical")
      causes.push_back({"FieldValueForbidden", "metadata.name",
                        fmt::format("Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: {} is "
                                    "not a known system priority class",
                                    name)});
  } else if (value && value->GetInt() > kHighestUserDefinable) {
    causes.push_back({"FieldValueForbidden", "value",
                      fmt::format("Forbidden: maximum allowed value of a user defined priority is {}", kHighestUserDefinable)});
  }
  if (json_string(obj, {"preemptionPolicy"}).empty()) set_str(obj, "preemptionPolicy", "PreemptLowerPriority", a);
  if (const std::string_view policy = json_string(obj, {"preemptionPolicy"}); policy != "PreemptLowerPriority" && policy != "Never")
    causes.push_back({"FieldValueNotSupported", "preemptionPolicy",
                      fmt::format("Unsupported value: {}: {}", json_quote(policy), supported({"PreemptLowerPriority", "Never"}))});
  if (!causes.empty()) return invalid(rt, name, std::move(causes));
  return {};
}

Result<void> Cluster::admit_namespace(const ResourceType& /*rt*/, Value& obj, Alloc& a, const Value* old, bool load) {
  // The API server labels every namespace with its name (what selectors such as a webhook's
  // namespaceSelector use to leave kube-system out).
  const std::string name(name_of(obj));
  set_str(ensure_object(ensure_object(obj, "metadata", a), "labels", a), "kubernetes.io/metadata.name", name, a);
  if (!old && !load) set_str(ensure_object(obj, "status", a), "phase", "Active", a);
  else if (json_string(obj, {"status", "phase"}).empty()) set_str(ensure_object(obj, "status", a), "phase", "Active", a);
  return {};
}

Result<void> Cluster::admit_workload(const ResourceType& rt, Value& obj, Alloc& a, const Value* /*old*/, bool /*load*/) {
  Value& spec = ensure_object(obj, "spec", a);
  default_workload(rt, spec, a);
  return validate_workload(rt, std::string(name_of(obj)), spec);
}

Result<void> Cluster::admit_crd(const ResourceType& rt, Value& obj, Alloc& a, const Value* /*old*/, bool /*load*/) {
  const std::string name(name_of(obj));
  std::string_view group = json_string(obj, {"spec", "group"});
  std::string_view plural = json_string(obj, {"spec", "names", "plural"});
  std::string_view kind = json_string(obj, {"spec", "names", "kind"});
  std::vector<StatusCause> causes;
  if (group.empty()) causes.push_back({"FieldValueRequired", "spec.group", "Required value"});
  if (plural.empty()) causes.push_back({"FieldValueRequired", "spec.names.plural", "Required value"});
  if (kind.empty()) causes.push_back({"FieldValueRequired", "spec.names.kind", "Required value"});
  if (causes.empty() && name != fmt::format("{}.{}", plural, group))
    causes.push_back(
        {"FieldValueInvalid", "metadata.name", fmt::format("Invalid value: \"{}\": must be spec.names.plural+\".\"+spec.group", name)});
  const Value* versions = json_path(obj, {"spec", "versions"});
  if (!versions || !versions->IsArray() || versions->Size() == 0)
    causes.push_back({"FieldValueRequired", "spec.versions", "Required value: must have exactly one version marked as storage version"});
  if (!causes.empty()) return invalid(rt, name, std::move(causes));
  // Accepted and established at once.
  Value& status = ensure_object(obj, "status", a);
  Value names(rapidjson::kObjectType);
  if (const Value* n = json_path(obj, {"spec", "names"})) names.CopyFrom(*n, a);
  if (json_string(names, {"singular"}).empty()) {
    std::string singular(kind);
    for (auto& c : singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    set_str(names, "singular", singular, a);
  }
  if (json_string(names, {"listKind"}).empty()) set_str(names, "listKind", fmt::format("{}List", kind), a);
  set(status, "acceptedNames", std::move(names), a);
  Value conds(rapidjson::kArrayType);
  for (auto [type, reason, message] : {std::tuple{"NamesAccepted", "NoConflicts", "no conflicts found"},
                                       std::tuple{"Established", "InitialNamesAccepted", "the initial names have been accepted"}}) {
    Value c(rapidjson::kObjectType);
    set_str(c, "type", type, a);
    set_str(c, "status", "True", a);
    set_str(c, "lastTransitionTime", format_time(now()), a);
    set_str(c, "reason", reason, a);
    set_str(c, "message", message, a);
    conds.PushBack(c, a);
  }
  set(status, "conditions", std::move(conds), a);
  Value stored(rapidjson::kArrayType);
  for (const auto& v : versions->GetArray())
    if (json_bool(v, {"storage"})) stored.PushBack(str(json_string(v, {"name"}), a), a);
  set(status, "storedVersions", std::move(stored), a);
  return {};
}

Result<void> Cluster::admit_secret(const ResourceType& /*rt*/, Value& obj, Alloc& a, const Value* /*old*/, bool /*load*/) {
  if (json_string(obj, {"type"}).empty()) set_str(obj, "type", "Opaque", a);
  // stringData is write-only: the API server merges it into data (base64) and never stores it.
  if (Value* sd = get_mut(obj, "stringData"); sd && sd->IsObject()) {
    Value& data = ensure_object(obj, "data", a);
    for (const auto& m : sd->GetObject())
      set_str(data, m.name.GetString(), base64_encode(m.value.IsString() ? m.value.GetString() : ""), a);
    obj.RemoveMember("stringData");
  }
  return {};
}

Result<void> Cluster::register_crd(const Value& crd) {
  std::string group(json_string(crd, {"spec", "group"}));
  const Value* names = json_path(crd, {"spec", "names"});
  const Value* versions = json_path(crd, {"spec", "versions"});
  if (!names || !versions || !versions->IsArray()) return Error::invalid("spec.names and spec.versions are required");
  for (const auto& v : versions->GetArray()) {
    ResourceType t;
    t.group = group;
    t.version = std::string(json_string(v, {"name"}));
    t.plural = std::string(json_string(*names, {"plural"}));
    t.kind = std::string(json_string(*names, {"kind"}));
    t.singular = std::string(json_string(*names, {"singular"}));
    if (t.singular.empty()) {
      t.singular = t.kind;
      for (auto& c : t.singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    t.namespaced = json_string(crd, {"spec", "scope"}, "Namespaced") == "Namespaced";
    if (const Value* sn = json_member(*names, "shortNames"); sn && sn->IsArray())
      for (const auto& s : sn->GetArray()) t.short_names.emplace_back(s.GetString());
    if (const Value* cat = json_member(*names, "categories"); cat && cat->IsArray())
      for (const auto& s : cat->GetArray()) t.categories.emplace_back(s.GetString());
    t.crd = true;
    t.served = json_bool(v, {"served"}, true);
    t.has_generation = true;
    if (json_path(v, {"subresources", "status"})) {
      t.subresources.push_back("status");
      t.status_subresource = true;
    }
    if (const Value* cols = json_member(v, "additionalPrinterColumns"); cols && cols->IsArray()) {
      for (const auto& c : cols->GetArray()) {
        PrinterColumn pc;
        pc.name = std::string(json_string(c, {"name"}));
        pc.type = std::string(json_string(c, {"type"}, "string"));
        pc.format = std::string(json_string(c, {"format"}));
        pc.description = std::string(json_string(c, {"description"}));
        pc.json_path = std::string(json_string(c, {"jsonPath"}));
        pc.priority = static_cast<int>(json_int(c, {"priority"}).value_or(0));
        t.columns.push_back(std::move(pc));
      }
    }
    if (const Value* s = json_path(v, {"schema", "openAPIV3Schema"})) {
      auto schema = Schema::parse(*s);
      if (!schema) return schema.error();
      t.schema = *schema;
      t.schema_json = to_json(*s);
    }
    registry_.upsert(std::move(t));
  }
  return {};
}

}  // namespace spotshift::kubesim
