// /_sim/...: the simulator's control endpoint for tests and the demo (outside /api and /apis).

#include "api.hpp"
#include "core/time.hpp"

#include <fmt/format.h>

namespace spotshift::kubesim {

namespace {

HttpResponse ok_json(std::string body = R"({"ok":true})") {
  HttpResponse r;
  r.body = std::move(body);
  return r;
}

HttpResponse bad(std::string message) {
  HttpResponse r;
  r.status = 400;
  r.body = status_body(Error::api(400, "BadRequest", std::move(message)), nullptr, "");
  return r;
}

}  // namespace

HttpResponse Api::control(const HttpRequest& req) {
  std::string_view p = req.path;
  p.remove_prefix(6);  // "/_sim/"
  Doc body(rapidjson::kObjectType);
  if (!req.body.empty()) {
    if (auto r = parse_json(req.body, body); !r || !body.IsObject()) return bad("control requests take a JSON object");
  }
  Faults& faults = cluster_.faults();
  if (p == "state" && req.method == "GET") {
    std::string counts;
    for (const ResourceType* t : cluster_.registry().all()) {
      if (t->storage) continue;
      size_t n = cluster_.store().objects(*t).size();
      if (!n) continue;
      counts += fmt::format("{}\"{}\":{}", counts.empty() ? "" : ",", t->qualified_plural(), n);
    }
    Doc violations(rapidjson::kArrayType);
    for (const auto& v : cluster_.budget_violations())
      violations.PushBack(Value(v.c_str(), static_cast<rapidjson::SizeType>(v.size()), violations.GetAllocator()),
                          violations.GetAllocator());
    return ok_json(fmt::format(
        R"({{"resourceVersion":{},"compactedResourceVersion":{},"time":"{}","timeScale":{},"faults":{},"objects":{{{}}},"budgetViolations":{}}})",
        cluster_.store().resource_version(), cluster_.store().compacted_rv(), format_micro_time(cluster_.now()), cluster_.clock().scale(),
        faults.rules(), counts, to_json(violations)));
  }
  if (req.method != "POST" && req.method != "DELETE") return bad("control endpoints take POST (or DELETE /_sim/faults)");
  if (p == "faults") {
    if (req.method == "DELETE") {
      faults.clear();
      return ok_json();
    }
    auto rule = FaultRule::from_json(req.body);
    if (!rule) return bad(rule.error().message);
    faults.add(*rule);
    return ok_json();
  }
  if (p == "watch/expire") {
    faults.expire_next_watch(std::string(json_string(body, {"resource"}, "*")));
    return ok_json();
  }
  if (p == "watch/drop") {
    drop_watches();
    return ok_json();
  }
  if (p == "continue/expire") {
    faults.expire_next_continue();
    return ok_json();
  }
  if (p == "conflict") {
    faults.conflict_next_update(std::string(json_string(body, {"resource"})), std::string(json_string(body, {"key"})));
    return ok_json();
  }
  if (p == "evictions/refuse") {
    faults.refuse_evictions(std::string(json_string(body, {"pod"})), static_cast<int>(json_int(body, {"times"}).value_or(1)));
    return ok_json();
  }
  if (p == "compact") {
    uint64_t rv =
        static_cast<uint64_t>(json_int(body, {"resourceVersion"}).value_or(static_cast<int64_t>(cluster_.store().resource_version())));
    cluster_.store().compact(rv);
    return ok_json();
  }
  if (p == "clock") {
    if (auto adv = json_string(body, {"advance"}); !adv.empty()) {
      auto d = parse_go_duration(adv);
      if (!d) return bad(d.error().message);
      cluster_.clock().advance(*d);
    }
    if (const Value* s = json_member(body, "scale"); s && s->IsNumber()) cluster_.clock().set_scale(s->GetDouble());
    return ok_json(fmt::format(R"({{"time":"{}","timeScale":{}}})", format_micro_time(cluster_.now()), cluster_.clock().scale()));
  }
  if (p == "controllers") {
    ClusterOptions& o = cluster_.options();
    auto toggle = [&](const char* key, bool& slot) {
      if (const Value* v = json_member(body, key); v && v->IsBool()) slot = v->GetBool();
    };
    toggle("scheduler", o.scheduler);
    toggle("workloads", o.workloads);
    toggle("kubelet", o.kubelet);
    toggle("disruption", o.disruption);
    toggle("nodeLifecycle", o.node_lifecycle);
    toggle("stallPdbStatus", o.stall_pdb_status);
    return ok_json();
  }
  if (p.starts_with("nodes/") && p.ends_with("/conditions")) {
    std::string node(p.substr(6, p.size() - 6 - 11));
    std::string type(json_string(body, {"type"}));
    std::string status(json_string(body, {"status"}));
    if (type.empty() || status.empty()) return bad("a condition needs type and status");
    auto r = cluster_.set_node_condition(node, type, status, json_string(body, {"reason"}, "KubesimControl"),
                                         json_string(body, {"message"}, "set through /_sim"));
    if (!r) return bad(r.error().message);
    return ok_json();
  }
  HttpResponse r;
  r.status = 404;
  r.body = status_body(Error::api(404, "NotFound", fmt::format("unknown control endpoint /_sim/{}", p)), nullptr, "");
  return r;
}

}  // namespace spotshift::kubesim
