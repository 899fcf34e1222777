#include "drain/steering.hpp"

#include "core/strings.hpp"
#include "model/json.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spotshift::drain {

std::string_view to_string(Steering s) { return s == Steering::kPreferred ? "Preferred" : "Off"; }

namespace {

std::string book_key(std::string_view ns, std::string_view controller_uid) { return fmt::format("{}/{}", ns, controller_uid); }

// A JSON Pointer token: '~' and '/' escaped (RFC 6901).
std::string pointer_token(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

bool present(const model::JsonValue* v) { return v && !v->IsNull(); }

std::string add_op(std::string_view path, std::string_view value_json) {
  return fmt::format(R"({{"op":"add","path":"{}","value":{}}})", path, value_json);
}

// The JSON patch that steers `pod` to `target`: the preferred node affinity term, added to what
// the pod already asks for, and the annotation.
std::string steering_patch(const model::JsonValue& pod, std::string_view target) {
  const std::string term =
      fmt::format(R"({{"weight":{},"preference":{{"matchFields":[{{"key":"metadata.name","operator":"In","values":[{}]}}]}}}})",
                  kSteeringWeight, json_quote(target));
  const std::string terms = fmt::format("[{}]", term);
  std::string ops;
  const model::JsonValue* spec = model::json_member(pod, "spec");
  const model::JsonValue* affinity = spec ? model::json_member(*spec, "affinity") : nullptr;
  const model::JsonValue* node_affinity = present(affinity) ? model::json_member(*affinity, "nodeAffinity") : nullptr;
  const model::JsonValue* preferred =
      present(node_affinity) ? model::json_member(*node_affinity, "preferredDuringSchedulingIgnoredDuringExecution") : nullptr;
  if (!present(affinity))
    ops = add_op("/spec/affinity", fmt::format(R"({{"nodeAffinity":{{"preferredDuringSchedulingIgnoredDuringExecution":{}}}}})", terms));
  else if (!present(node_affinity))
    ops = add_op("/spec/affinity/nodeAffinity", fmt::format(R"({{"preferredDuringSchedulingIgnoredDuringExecution":{}}})", terms));
  else if (!present(preferred) || !preferred->IsArray())
    ops = add_op("/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution", terms);
  else ops = add_op("/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution/-", term);
  const model::JsonValue* annotations = model::json_path(pod, {"metadata", "annotations"});
  if (!present(annotations) || !annotations->IsObject())
    ops += "," + add_op("/metadata/annotations", fmt::format("{{{}:{}}}", json_quote(kSteeredToAnnotation), json_quote(target)));
  else ops += "," + add_op(fmt::format("/metadata/annotations/{}", pointer_token(kSteeredToAnnotation)), json_quote(target));
  return fmt::format("[{}]", ops);
}

}  // namespace

void SteeringBook::add(Steer steer) {
  auto& queue = steers_[book_key(steer.ns, steer.controller_uid)];
  queue.push_back(std::move(steer));
}

void SteeringBook::erase_where(const std::function<bool(const Steer&)>& pred) {
  for (auto it = steers_.begin(); it != steers_.end();) {
    auto& q = it->second;
    q.erase(std::remove_if(q.begin(), q.end(), pred), q.end());
    it = q.empty() ? steers_.erase(it) : std::next(it);
  }
}

void SteeringBook::withdraw(std::string_view ns, std::string_view pod_name) {
  erase_where([&](const Steer& s) { return s.ns == ns && s.pod_name == pod_name; });
}

void SteeringBook::drop_drain(std::string_view node) {
  erase_where([&](const Steer& s) { return s.drained_node == node; });
}

std::optional<Steer> SteeringBook::take(std::string_view ns, std::string_view controller_uid, std::string_view controller_kind,
                                        std::string_view name, Time now, bool keep) {
  auto it = steers_.find(book_key(ns, controller_uid));
  if (it == steers_.end()) return std::nullopt;
  auto& q = it->second;
  q.erase(std::remove_if(q.begin(), q.end(), [&](const Steer& s) { return s.expires <= now; }), q.end());
  std::optional<Steer> found;
  // A StatefulSet recreates the pod under its own name; other controllers make new names.
  const bool by_name = controller_kind == "StatefulSet";
  auto match = std::find_if(q.begin(), q.end(), [&](const Steer& s) { return !by_name || s.pod_name == name; });
  if (match != q.end() && keep) {
    found = *match;
  } else if (match != q.end()) {
    found = std::move(*match);
    q.erase(match);
  }
  if (q.empty()) steers_.erase(it);
  return found;
}

size_t SteeringBook::size() const {
  size_t n = 0;
  for (const auto& [key, q] : steers_) n += q.size();
  return n;
}

Result<AdmissionAnswer> answer_admission(std::string_view body, SteeringBook& book, Time now) {
  model::JsonDocument doc;
  if (auto parsed = model::parse_json(body, doc); !parsed) return parsed.error().wrap("the request body is not JSON");
  if (!doc.IsObject() || model::json_string(doc, {"kind"}) != "AdmissionReview")
    return Error::invalid("the request body is not an AdmissionReview");
  if (model::json_string(doc, {"apiVersion"}) != "admission.k8s.io/v1")
    return Error::invalid(fmt::format("AdmissionReview {} is not served: only admission.k8s.io/v1 (admissionReviewVersions: [v1])",
                                      model::json_string(doc, {"apiVersion"})));
  const model::JsonValue* request = model::json_member(doc, "request");
  if (!request || !request->IsObject()) return Error::invalid("the AdmissionReview has no request");
  const std::string_view uid = model::json_string(*request, {"uid"});
  if (uid.empty()) return Error::invalid("the AdmissionReview's request has no uid");

  AdmissionAnswer answer;
  std::string patch;
  const model::JsonValue* pod = model::json_member(*request, "object");
  const bool pod_create = model::json_string(*request, {"operation"}) == "CREATE" &&
                          model::json_string(*request, {"kind", "kind"}) == "Pod" &&
                          model::json_string(*request, {"kind", "group"}).empty();
  if (pod_create && pod && pod->IsObject() && model::json_string(*request, {"subResource"}).empty()) {
    // The pod's namespace is the request's: a pod created through its namespace's collection
    // need not say it in metadata.
    std::string_view ns = model::json_string(*request, {"namespace"});
    if (ns.empty()) ns = model::json_string(*pod, {"metadata", "namespace"});
    std::string_view name = model::json_string(*pod, {"metadata", "name"});
    answer.pod = fmt::format("{}/{}", ns, name.empty() ? model::json_string(*pod, {"metadata", "generateName"}) : name);
    if (const model::JsonValue* owners = model::json_path(*pod, {"metadata", "ownerReferences"}); owners && owners->IsArray()) {
      for (const auto& o : owners->GetArray()) {
        if (!model::json_bool(o, {"controller"})) continue;
        answer.controller =
            fmt::format("{}/{} ({})", model::json_string(o, {"kind"}), model::json_string(o, {"name"}), model::json_string(o, {"uid"}));
        answer.steer = book.take(ns, model::json_string(o, {"uid"}), model::json_string(o, {"kind"}), name, now,
                                 model::json_bool(*request, {"dryRun"}));
        break;
      }
    }
    if (answer.steer) patch = steering_patch(*pod, answer.steer->target);
  }
  std::string response = fmt::format(R"("uid":{},"allowed":true)", json_quote(uid));
  if (!patch.empty()) response += fmt::format(R"(,"patchType":"JSONPatch","patch":"{}")", base64_encode(patch));
  answer.body = fmt::format(R"({{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{{{}}}}})", response);
  return answer;
}

}  // namespace spotshift::drain
