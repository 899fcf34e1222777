#include "table.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <functional>

namespace spotshift::kubesim {

namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

std::string age(const Value& obj, Time now) {
  auto ts = parse_time(json_string(obj, {"metadata", "creationTimestamp"}));
  return ts ? format_age(now - *ts) : "<unknown>";
}

std::string age_of(std::string_view timestamp, Time now) {
  auto ts = parse_time(timestamp);
  return ts ? format_age(now - *ts) : "<unknown>";
}

std::string node_status(const Value& node) {
  std::string status = "Unknown";
  if (const Value* conds = json_path(node, {"status", "conditions"}); conds && conds->IsArray())
    for (const auto& c : conds->GetArray())
      if (json_string(c, {"type"}) == "Ready") status = json_string(c, {"status"}) == "True" ? "Ready" : "NotReady";
  if (json_bool(node, {"spec", "unschedulable"})) status += ",SchedulingDisabled";
  return status;
}

std::string node_roles(const Value& node) {
  std::string roles;
  if (const Value* labels = json_path(node, {"metadata", "labels"}); labels && labels->IsObject())
    for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
      std::string_view k(it->name.GetString(), it->name.GetStringLength());
      if (k.starts_with("node-role.kubernetes.io/")) {
        if (!roles.empty()) roles += ',';
        roles += k.substr(std::string_view("node-role.kubernetes.io/").size());
      }
    }
  return roles.empty() ? "<none>" : roles;
}

std::string pod_ready(const Value& pod) {
  size_t total = 0, ready = 0;
  if (const Value* cs = json_path(pod, {"spec", "containers"}); cs && cs->IsArray()) total = cs->Size();
  if (const Value* st = json_path(pod, {"status", "containerStatuses"}); st && st->IsArray())
    for (const auto& s : st->GetArray()) ready += json_bool(s, {"ready"}) ? 1 : 0;
  return fmt::format("{}/{}", ready, total);
}

std::string pod_status(const Value& pod) {
  if (json_path(pod, {"metadata", "deletionTimestamp"})) return "Terminating";
  std::string_view reason = json_string(pod, {"status", "reason"});
  if (!reason.empty()) return std::string(reason);
  std::string_view phase = json_string(pod, {"status", "phase"}, "Pending");
  return std::string(phase);
}

std::string int_or_string(const Value& obj, std::initializer_list<std::string_view> path) {
  const Value* v = json_path(obj, path);
  if (!v) return "N/A";
  if (v->IsString()) return v->GetString();
  if (v->IsInt64()) return std::to_string(v->GetInt64());
  return "N/A";
}

std::string num(const Value& obj, std::initializer_list<std::string_view> path) { return std::to_string(json_int(obj, path).value_or(0)); }

// The first address of a type in status.addresses, or <none>.
std::string node_address(const Value& node, std::string_view type) {
  if (const Value* list = json_path(node, {"status", "addresses"}); list && list->IsArray())
    for (const auto& addr : list->GetArray())
      if (json_string(addr, {"type"}) == type) return std::string(json_string(addr, {"address"}));
  return "<none>";
}

// kubectl's READINESS GATES column: how many of the pod's readiness gates are True, or <none>.
std::string readiness_gates(const Value& pod) {
  const Value* gates = json_path(pod, {"spec", "readinessGates"});
  if (!gates || !gates->IsArray() || gates->Empty()) return "<none>";
  const Value* conds = json_path(pod, {"status", "conditions"});
  int ready = 0;
  for (const auto& g : gates->GetArray())
    if (conds && conds->IsArray())
      for (const auto& c : conds->GetArray())
        if (json_string(c, {"type"}) == json_string(g, {"conditionType"}) && json_string(c, {"status"}) == "True") ++ready;
  return fmt::format("{}/{}", ready, gates->Size());
}

// A DaemonSet's pod template nodeSelector as kubectl prints it: k=v pairs sorted by key, or <none>.
std::string node_selector(const Value& ds) {
  const Value* sel = json_path(ds, {"spec", "template", "spec", "nodeSelector"});
  if (!sel || !sel->IsObject() || sel->MemberCount() == 0) return "<none>";
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  for (auto it = sel->MemberBegin(); it != sel->MemberEnd(); ++it)
    pairs.emplace_back(it->name.GetString(), it->value.IsString() ? it->value.GetString() : "");
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [k, v] : pairs) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out;
}

std::string event_object(const Value& ev) {
  std::string_view kind = json_string(ev, {"involvedObject", "kind"});
  if (kind.empty()) kind = json_string(ev, {"regarding", "kind"});
  std::string_view name = json_string(ev, {"involvedObject", "name"});
  if (name.empty()) name = json_string(ev, {"regarding", "name"});
  std::string lower(kind);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return fmt::format("{}/{}", lower, name);
}

std::string event_last_seen(const Value& ev, Time now) {
  std::string_view ts = json_string(ev, {"series", "lastObservedTime"});
  if (ts.empty()) ts = json_string(ev, {"lastTimestamp"});
  if (ts.empty()) ts = json_string(ev, {"deprecatedLastTimestamp"});
  if (ts.empty()) ts = json_string(ev, {"eventTime"});
  return ts.empty() ? "<unknown>" : age_of(ts, now);
}

struct BuiltIn {
  std::vector<TableColumn> columns;
  std::function<std::vector<std::string>(const Value&, Time)> cells;
};

// The columns as kubectl prints them, laid out by hand.
// clang-format off
BuiltIn builtin(const ResourceType& rt) {
  auto name = [](const Value& o) { return std::string(name_of(o)); };
  const std::string& k = rt.kind;
  if (k == "Node")
    return {{{"Name", "string", "name"}, {"Status", "string"}, {"Roles", "string"}, {"Age", "string"}, {"Version", "string"},
             {"Internal-IP", "string", "", 1}, {"External-IP", "string", "", 1}, {"OS-Image", "string", "", 1},
             {"Kernel-Version", "string", "", 1}, {"Container-Runtime", "string", "", 1}},
            [=](const Value& o, Time now) {
              auto info = [&](std::string_view key) { return std::string(json_string(o, {"status", "nodeInfo", key}, "<unknown>")); };
              return std::vector<std::string>{name(o), node_status(o), node_roles(o), age(o, now), info("kubeletVersion"),
                                              node_address(o, "InternalIP"), node_address(o, "ExternalIP"), info("osImage"),
                                              info("kernelVersion"), info("containerRuntimeVersion")};
            }};
  if (k == "Pod")
    return {{{"Name", "string", "name"}, {"Ready", "string"}, {"Status", "string"}, {"Restarts", "string"}, {"Age", "string"},
             {"IP", "string", "", 1}, {"Node", "string", "", 1}, {"Nominated Node", "string", "", 1},
             {"Readiness Gates", "string", "", 1}},
            [=](const Value& o, Time now) {
              std::string ip(json_string(o, {"status", "podIP"}, "<none>"));
              std::string node(json_string(o, {"spec", "nodeName"}, "<none>"));
              std::string nominated(json_string(o, {"status", "nominatedNodeName"}, "<none>"));
              return std::vector<std::string>{name(o), pod_ready(o), pod_status(o), "0", age(o, now), ip, node, nominated,
                                              readiness_gates(o)};
            }};
  if (k == "PodDisruptionBudget")
    return {{{"Name", "string", "name"}, {"Min Available", "string"}, {"Max Unavailable", "string"},
             {"Allowed Disruptions", "integer"}, {"Age", "string"}},
            [=](const Value& o, Time now) {
              return std::vector<std::string>{name(o), int_or_string(o, {"spec", "minAvailable"}),
                                              int_or_string(o, {"spec", "maxUnavailable"}),
                                              num(o, {"status", "disruptionsAllowed"}), age(o, now)};
            }};
  if (k == "Event")
    return {{{"Last Seen", "string"}, {"Type", "string"}, {"Reason", "string"}, {"Object", "string"}, {"Message", "string"}},
            [=](const Value& o, Time now) {
              std::string_view msg = json_string(o, {"message"});
              if (msg.empty()) msg = json_string(o, {"note"});
              return std::vector<std::string>{event_last_seen(o, now), std::string(json_string(o, {"type"})),
                                              std::string(json_string(o, {"reason"})), event_object(o), std::string(msg)};
            }};
  if (k == "Namespace")
    return {{{"Name", "string", "name"}, {"Status", "string"}, {"Age", "string"}}, [=](const Value& o, Time now) {
              return std::vector<std::string>{name(o), std::string(json_string(o, {"status", "phase"}, "Active")), age(o, now)};
            }};
  if (k == "Lease")
    return {{{"Name", "string", "name"}, {"Holder", "string"}, {"Age", "string"}}, [=](const Value& o, Time now) {
              return std::vector<std::string>{name(o), std::string(json_string(o, {"spec", "holderIdentity"})), age(o, now)};
            }};
  auto ready_of_desired = [](const Value& o) {
    return fmt::format("{}/{}", json_int(o, {"status", "readyReplicas"}).value_or(0), json_int(o, {"spec", "replicas"}).value_or(1));
  };
  if (k == "Deployment")
    return {{{"Name", "string", "name"}, {"Ready", "string"}, {"Up-to-date", "string"}, {"Available", "string"}, {"Age", "string"}},
            [=](const Value& o, Time now) {
              return std::vector<std::string>{name(o), ready_of_desired(o), num(o, {"status", "updatedReplicas"}),
                                              num(o, {"status", "availableReplicas"}), age(o, now)};
            }};
  if (k == "StatefulSet")
    return {{{"Name", "string", "name"}, {"Ready", "string"}, {"Age", "string"}},
            [=](const Value& o, Time now) { return std::vector<std::string>{name(o), ready_of_desired(o), age(o, now)}; }};
  if (k == "ReplicaSet")
    return {{{"Name", "string", "name"}, {"Desired", "integer"}, {"Current", "integer"}, {"Ready", "integer"}, {"Age", "string"}},
            [=](const Value& o, Time now) {
              return std::vector<std::string>{name(o), num(o, {"spec", "replicas"}), num(o, {"status", "replicas"}),
                                              num(o, {"status", "readyReplicas"}), age(o, now)};
            }};
  if (k == "DaemonSet")
    return {{{"Name", "string", "name"}, {"Desired", "integer"}, {"Current", "integer"}, {"Ready", "integer"},
             {"Up-to-date", "integer"}, {"Available", "integer"}, {"Node Selector", "string"}, {"Age", "string"}},
            [=](const Value& o, Time now) {
              return std::vector<std::string>{name(o), num(o, {"status", "desiredNumberScheduled"}),
                                              num(o, {"status", "currentNumberScheduled"}), num(o, {"status", "numberReady"}),
                                              num(o, {"status", "updatedNumberScheduled"}), num(o, {"status", "numberAvailable"}),
                                              node_selector(o), age(o, now)};
            }};
  // Data counts data and binaryData keys together, as kubectl's printer does.
  auto data_count = [](const Value& o) {
    size_t n = 0;
    for (const char* key : {"data", "binaryData"})
      if (const Value* d = json_path(o, {key}); d && d->IsObject()) n += d->MemberCount();
    return std::to_string(n);
  };
  if (k == "ConfigMap")
    return {{{"Name", "string", "name"}, {"Data", "integer"}, {"Age", "string"}},
            [=](const Value& o, Time now) { return std::vector<std::string>{name(o), data_count(o), age(o, now)}; }};
  if (k == "Secret")
    return {{{"Name", "string", "name"}, {"Type", "string"}, {"Data", "integer"}, {"Age", "string"}},
            [=](const Value& o, Time now) {
              return std::vector<std::string>{name(o), std::string(json_string(o, {"type"})), data_count(o), age(o, now)};
            }};
  if (k == "CustomResourceDefinition")
    return {{{"Name", "string", "name"}, {"Created At", "date"}}, [=](const Value& o, Time) {
              return std::vector<std::string>{name(o), std::string(json_string(o, {"metadata", "creationTimestamp"}))};
            }};
  return {{{"Name", "string", "name"}, {"Age", "string"}},
          [=](const Value& o, Time now) { return std::vector<std::string>{name(o), age(o, now)}; }};
}
// clang-format on

void write_partial_metadata(Writer& w, const Value& obj) {
  w.StartObject();
  w.Key("kind");
  w.String("PartialObjectMetadata");
  w.Key("apiVersion");
  w.String("meta.k8s.io/v1");
  w.Key("metadata");
  if (const Value* m = json_member(obj, "metadata")) m->Accept(w);
  else w.StartObject(), w.EndObject();
  w.EndObject();
}

void write_cell(Writer& w, const Value* v, const std::string& type, Time now) {
  if (!v) {
    w.Null();
    return;
  }
  if (type == "date" && v->IsString()) {
    w.String(age_of(v->GetString(), now));
  } else if (type == "integer" && v->IsInt64()) {
    w.Int64(v->GetInt64());
  } else if (type == "number" && v->IsNumber()) {
    w.Double(v->GetDouble());
  } else if (type == "boolean" && v->IsBool()) {
    w.Bool(v->GetBool());
  } else if (v->IsString()) {
    w.String(v->GetString(), v->GetStringLength());
  } else {
    // Arrays and objects print as JSON, numbers as themselves.
    std::string s = to_json(*v);
    w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  }
}

}  // namespace

std::vector<const Value*> json_path(const Value& root, std::string_view path) {
  std::vector<const Value*> cur{&root};
  size_t i = 0;
  if (path.starts_with("{") && path.ends_with("}")) path = path.substr(1, path.size() - 2);
  while (i < path.size()) {
    std::vector<const Value*> next;
    if (path[i] == '.') {
      size_t j = i + 1;
      while (j < path.size() && path[j] != '.' && path[j] != '[') ++j;
      std::string_view member = path.substr(i + 1, j - i - 1);
      for (const Value* v : cur)
        if (const Value* c = json_member(*v, member)) next.push_back(c);
      i = j;
    } else if (path[i] == '[') {
      size_t j = path.find(']', i);
      if (j == std::string_view::npos) return {};
      std::string_view inner = path.substr(i + 1, j - i - 1);
      if (inner == "*") {
        for (const Value* v : cur)
          if (v->IsArray())
            for (const auto& e : v->GetArray()) next.push_back(&e);
      } else if (inner.starts_with("?(@.")) {
        // ?(@.key=="value")
        size_t eq = inner.find("==");
        if (eq == std::string_view::npos) return {};
        std::string_view key = inner.substr(4, eq - 4);
        std::string_view want = inner.substr(eq + 2);
        if (want.ends_with(")")) want.remove_suffix(1);
        if (want.size() >= 2 && (want.front() == '"' || want.front() == '\'')) want = want.substr(1, want.size() - 2);
        for (const Value* v : cur)
          if (v->IsArray())
            for (const auto& e : v->GetArray())
              if (json_string(e, {key}) == want) next.push_back(&e);
      } else {
        size_t idx = 0;
        for (char c : inner) idx = idx * 10 + static_cast<size_t>(c - '0');
        for (const Value* v : cur)
          if (v->IsArray() && idx < v->Size()) next.push_back(&(*v)[static_cast<rapidjson::SizeType>(idx)]);
      }
      i = j + 1;
    } else {
      return {};
    }
    cur = std::move(next);
    if (cur.empty()) return cur;
  }
  return cur;
}

std::vector<TableColumn> table_columns(const ResourceType& rt) {
  if (!rt.crd) return builtin(rt).columns;
  std::vector<TableColumn> cols{{"Name", "string", "name", 0}};
  if (rt.columns.empty()) {
    cols.push_back({"Age", "date", "", 0});
    return cols;
  }
  for (const auto& c : rt.columns) cols.push_back({c.name, c.type, c.format, c.priority});
  return cols;
}

std::string render_table(const ResourceType& rt, const std::vector<const Value*>& objs, Time now, std::string_view rv,
                         std::string_view cont) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("kind");
  w.String("Table");
  w.Key("apiVersion");
  w.String("meta.k8s.io/v1");
  w.Key("metadata");
  w.StartObject();
  if (!rv.empty()) {
    w.Key("resourceVersion");
    w.String(rv.data(), static_cast<rapidjson::SizeType>(rv.size()));
  }
  if (!cont.empty()) {
    w.Key("continue");
    w.String(cont.data(), static_cast<rapidjson::SizeType>(cont.size()));
  }
  w.EndObject();
  auto columns = table_columns(rt);
  w.Key("columnDefinitions");
  w.StartArray();
  for (const auto& c : columns) {
    w.StartObject();
    w.Key("name");
    w.String(c.name);
    w.Key("type");
    w.String(c.type == "date" ? "string" : c.type);
    w.Key("format");
    w.String(c.format);
    w.Key("description");
    w.String("");
    w.Key("priority");
    w.Int(c.priority);
    w.EndObject();
  }
  w.EndArray();
  w.Key("rows");
  w.StartArray();
  BuiltIn b = rt.crd ? BuiltIn{} : builtin(rt);
  for (const Value* obj : objs) {
    w.StartObject();
    w.Key("cells");
    w.StartArray();
    if (rt.crd) {
      w.String(std::string(name_of(*obj)));
      if (rt.columns.empty()) {
        w.String(age(*obj, now));
      } else {
        for (const auto& c : rt.columns) {
          auto found = json_path(*obj, c.json_path);
          write_cell(w, found.empty() ? nullptr : found.front(), c.type, now);
        }
      }
    } else {
      // Integer columns hold numbers, as the apiserver's printers fill them.
      auto cells = b.cells(*obj, now);
      for (size_t i = 0; i < cells.size(); ++i) {
        auto n = i < b.columns.size() && b.columns[i].type == "integer" ? parse_int(cells[i]) : std::nullopt;
        if (n) w.Int64(*n);
        else w.String(cells[i]);
      }
    }
    w.EndArray();
    w.Key("object");
    write_partial_metadata(w, *obj);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace spotshift::kubesim
