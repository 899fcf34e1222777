// Mutating admission webhooks on create (webhooks.hpp says what is and is not done).

#include "webhooks.hpp"
#include "cel.hpp"
#include "cluster.hpp"
#include "watch.hpp"

#include "core/log.hpp"
#include "core/strings.hpp"

#include <fmt/format.h>

namespace spotshift::kubesim {

namespace {

const log::Logger logger("kubesim-webhooks");

bool listed(const Value* list, std::string_view value) {
  if (!list || !list->IsArray()) return false;
  for (const auto& v : list->GetArray())
    if (v.IsString() && (v.GetString() == value || std::string_view(v.GetString()) == "*")) return true;
  return false;
}

// Whether one of the webhook's rules covers a create of rt (no subresource).
bool rules_match(const Value& hook, const ResourceType& rt) {
  const Value* rules = json_member(hook, "rules");
  if (!rules || !rules->IsArray()) return false;
  for (const auto& r : rules->GetArray()) {
    if (!listed(json_member(r, "operations"), "CREATE")) continue;
    if (!listed(json_member(r, "apiGroups"), rt.group) || !listed(json_member(r, "apiVersions"), rt.version)) continue;
    if (!listed(json_member(r, "resources"), rt.plural)) continue;
    std::string_view scope = json_string(r, {"scope"}, "*");
    if (scope == "Cluster" && rt.namespaced) continue;
    if (scope == "Namespaced" && !rt.namespaced) continue;
    return true;
  }
  return false;
}

// A selector member of the webhook: absent or empty matches everything.
bool selector_matches(const Value& hook, std::string_view key, const model::Labels& labels) {
  const Value* sel = json_member(hook, key);
  if (!sel || sel->IsNull() || (sel->IsObject() && sel->MemberCount() == 0)) return true;
  auto parsed = label_selector_of(hook, key);
  return parsed && parsed->matches(labels);
}

}  // namespace

Result<void> Cluster::call_mutating_webhooks(const ResourceType& rt, std::string_view ns, Doc& obj, const WriteOptions& opts) {
  const ResourceType* configs = registry_.find("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations");
  if (!configs || store_.objects(*configs).empty()) return {};
  model::Labels ns_labels;
  if (rt.namespaced)
    if (auto n = store_.get(*registry_.namespaces(), ns)) ns_labels = labels_of(n->doc);
  // Copies: a webhook's call may take a while, and the configurations are what they were when
  // the request came.
  const Store::Objects all = store_.objects(*configs);
  for (const auto& [name, config] : all) {
    const Value* hooks = json_member(config->doc, "webhooks");
    if (!hooks || !hooks->IsArray()) continue;
    for (const auto& hook : hooks->GetArray()) {
      const std::string hook_name(json_string(hook, {"name"}));
      if (!rules_match(hook, rt)) continue;
      if (rt.namespaced && !selector_matches(hook, "namespaceSelector", ns_labels)) continue;
      if (!selector_matches(hook, "objectSelector", labels_of(obj))) continue;
      const bool fail_closed = json_string(hook, {"failurePolicy"}, "Fail") == "Fail";
      auto failed = [&](std::string why) -> Result<void> {
        if (!fail_closed) {
          logger.info("webhook call failed; failurePolicy Ignore lets the request through", {{"webhook", hook_name}, {"error", why}});
          return {};
        }
        return Error::api(
            500, "InternalError",
            fmt::format("Internal error occurred: failed calling webhook \"{}\": failed to call webhook: {}", hook_name, why));
      };
      // matchConditions: every one must hold; an evaluation error is a failed call.
      bool skip = false;
      if (const Value* conds = json_member(hook, "matchConditions"); conds && conds->IsArray()) {
        for (const auto& c : conds->GetArray()) {
          auto program = cel::Program::compile(json_string(c, {"expression"}));
          auto verdict = program ? program->eval({{"object", &obj}, {"oldObject", nullptr}}) : Result<bool>(program.error());
          if (!verdict) {
            if (auto r = failed(fmt::format("matchCondition \"{}\": {}", json_string(c, {"name"}), verdict.error().message)); !r) return r;
            skip = true;
            break;
          }
          if (!*verdict) {
            skip = true;
            break;
          }
        }
      }
      if (skip) continue;
      std::string_view side_effects = json_string(hook, {"sideEffects"});
      if (opts.dry_run && side_effects != "None" && side_effects != "NoneOnDryRun")
        return bad_request(fmt::format("admission webhook \"{}\" does not support dry run", hook_name));
      std::string_view url = json_string(hook, {"clientConfig", "url"});
      if (url.empty()) {
        if (auto r = failed("kubesim has no Service network: only clientConfig.url is called"); !r) return r;
        continue;
      }
      auto ca = base64_decode(json_string(hook, {"clientConfig", "caBundle"}));
      const auto timeout = std::chrono::seconds(json_int(hook, {"timeoutSeconds"}).value_or(10));
      const std::string uid = new_uid();
      std::string review = fmt::format(
          R"({{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"{}",)"
          R"("kind":{{"group":"{}","version":"{}","kind":"{}"}},"resource":{{"group":"{}","version":"{}","resource":"{}"}},)"
          R"("requestKind":{{"group":"{}","version":"{}","kind":"{}"}},"requestResource":{{"group":"{}","version":"{}","resource":"{}"}},)"
          R"("name":{},"namespace":{},"operation":"CREATE","userInfo":{{}},"object":{},"oldObject":null,"dryRun":{},)"
          R"("options":{{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions"}}}}}})",
          uid, rt.group, rt.version, rt.kind, rt.group, rt.version, rt.plural, rt.group, rt.version, rt.kind, rt.group, rt.version,
          rt.plural, json_quote(name_of(obj)), json_quote(ns), to_json(obj), opts.dry_run ? "true" : "false");
      auto reply = webhook_caller_ ? webhook_caller_(std::string(url), ca ? *ca : std::string(), review, timeout)
                                   : Result<std::string>(Error::network("kubesim calls no webhooks here"));
      if (!reply) {
        if (auto r = failed(reply.error().message); !r) return r;
        continue;
      }
      Doc answer;
      if (answer.Parse(reply->c_str()).HasParseError() || json_string(answer, {"response", "uid"}) != uid) {
        if (auto r = failed("the response is not an AdmissionReview for this request"); !r) return r;
        continue;
      }
      if (!json_bool(answer, {"response", "allowed"}))
        return Error::api(static_cast<int>(json_int(answer, {"response", "status", "code"}).value_or(400)), "BadRequest",
                          fmt::format("admission webhook \"{}\" denied the request: {}", hook_name,
                                      json_string(answer, {"response", "status", "message"}, "without explanation")));
      std::string_view patch = json_string(answer, {"response", "patch"});
      if (patch.empty()) continue;
      if (json_string(answer, {"response", "patchType"}) != "JSONPatch") {
        if (auto r = failed("the response has a patch but no patchType JSONPatch"); !r) return r;
        continue;
      }
      auto text = base64_decode(patch);
      Doc ops;
      if (!text || ops.Parse(text->c_str()).HasParseError() || !ops.IsArray()) {
        if (auto r = failed("the response's patch is not a base64 JSON patch"); !r) return r;
        continue;
      }
      // A patch is applied to a copy: one that fails leaves the object as it was.
      Doc patched;
      patched.CopyFrom(obj, patched.GetAllocator());
      if (auto applied = json_patch(patched, ops, patched.GetAllocator()); !applied) {
        if (auto r = failed(fmt::format("applying the patch: {}", applied.error().message)); !r) return r;
        continue;
      }
      obj.Swap(patched);
    }
  }
  return {};
}

}  // namespace spotshift::kubesim
