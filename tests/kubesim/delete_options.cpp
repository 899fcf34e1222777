#include "delete_options.hpp"

#include "core/strings.hpp"
#include "json_util.hpp"
#include "protobuf.hpp"

#include <fmt/format.h>

#include <span>

namespace spotshift::kubesim {

namespace {

Error malformed() { return Error::invalid("malformed protobuf DeleteOptions body"); }

}  // namespace

Result<DeleteOptions> decode_delete_options_protobuf(std::string_view body) {
  ProtoEnvelope envelope;
  if (!unwrap_protobuf(body, envelope)) return malformed();
  uint32_t field, wire;
  DeleteOptions out;
  ProtoReader r(envelope.raw);
  while (!r.done()) {
    if (!r.next(field, wire)) return malformed();
    uint64_t v;
    std::string_view s;
    if (field == 1 && wire == 0) {
      if (!r.varint(v)) return malformed();
      out.grace_period_seconds = static_cast<int64_t>(v);
    } else if (field == 2 && wire == 2) {
      if (!r.bytes(s)) return malformed();
      ProtoReader pre(s);
      while (!pre.done()) {
        std::string_view text;
        if (!pre.next(field, wire)) return malformed();
        if (wire == 2 && (field == 1 || field == 2)) {
          if (!pre.bytes(text)) return malformed();
          (field == 1 ? out.precondition_uid : out.precondition_resource_version) = std::string(text);
        } else if (!pre.skip(wire)) {
          return malformed();
        }
      }
    } else if (field == 4 && wire == 2) {
      if (!r.bytes(s)) return malformed();
      out.propagation_policy = std::string(s);
    } else if (field == 5 && wire == 2) {
      if (!r.bytes(s)) return malformed();
      out.dry_run = true;
    } else if (!r.skip(wire)) {
      return malformed();
    }
  }
  return out;
}

Result<DeleteOptions> decode_delete_options(std::string_view content_type, std::string_view body,
                                            const std::map<std::string, std::string>& query) {
  DeleteOptions out;
  if (!body.empty()) {
    if (content_type.starts_with("application/vnd.kubernetes.protobuf")) {
      auto pb = decode_delete_options_protobuf(body);
      if (!pb) return pb.error();
      out = *pb;
    } else {
      Doc doc;
      if (auto r = parse_json(body, doc); !r) return r.error();
      if (auto g = json_int(doc, {"gracePeriodSeconds"})) out.grace_period_seconds = *g;
      out.precondition_uid = std::string(json_string(doc, {"preconditions", "uid"}));
      out.precondition_resource_version = std::string(json_string(doc, {"preconditions", "resourceVersion"}));
      out.propagation_policy = std::string(json_string(doc, {"propagationPolicy"}));
      if (json_bool(doc, {"orphanDependents"})) out.propagation_policy = "Orphan";
      if (const Value* d = json_member(doc, "dryRun"); d && d->IsArray() && d->Size() > 0) out.dry_run = true;
    }
  }
  if (auto it = query.find("gracePeriodSeconds"); it != query.end()) {
    auto g = parse_int(it->second);
    if (!g) return Error::invalid(fmt::format("invalid gracePeriodSeconds \"{}\"", it->second));
    out.grace_period_seconds = *g;
  }
  if (auto it = query.find("propagationPolicy"); it != query.end()) out.propagation_policy = it->second;
  if (auto it = query.find("dryRun"); it != query.end() && !it->second.empty()) out.dry_run = true;
  return out;
}

Result<Doc> decode_review_protobuf(std::string_view body, std::string_view kind) {
  auto bad = [&] { return Error::api(400, "BadRequest", fmt::format("the request body is not a valid protobuf {}", kind)); };
  ProtoEnvelope envelope;
  if (!unwrap_protobuf(body, envelope)) return bad();
  const std::string_view raw = envelope.raw;
  Doc d(rapidjson::kObjectType);
  auto& a = d.GetAllocator();
  Value spec(rapidjson::kObjectType), groups(rapidjson::kArrayType);
  // ResourceAttributes: namespace 1, verb 2, group 3, version 4, resource 5, subresource 6, name 7.
  // NonResourceAttributes: path 1, verb 2.
  static constexpr std::string_view kResource[] = {"", "namespace", "verb", "group", "version", "resource", "subresource", "name"};
  static constexpr std::string_view kNonResource[] = {"", "path", "verb"};
  auto attributes = [&](std::string_view msg, std::span<const std::string_view> names, std::string_view key) {
    Value attrs(rapidjson::kObjectType);
    bool ok = each_bytes_field(msg, [&](uint32_t field, std::string_view v) {
      if (field < names.size()) set_str(attrs, names[field], v, a);
    });
    set(spec, key, std::move(attrs), a);
    return ok;
  };
  bool ok = true;
  bool parsed = each_bytes_field(raw, [&](uint32_t field, std::string_view v) {
    if (field != 2) return;  // spec; metadata and status are not read
    // SelfSubjectAccessReviewSpec and SubjectAccessReviewSpec: resourceAttributes 1,
    // nonResourceAttributes 2; SubjectAccessReviewSpec also user 3, groups 4.
    bool spec_parsed = each_bytes_field(v, [&](uint32_t f, std::string_view w) {
      if (kind == "SelfSubjectRulesReview") {  // SelfSubjectRulesReviewSpec: namespace 1
        if (f == 1) set_str(spec, "namespace", w, a);
      } else if (f == 1 && !attributes(w, kResource, "resourceAttributes")) ok = false;
      else if (f == 2 && !attributes(w, kNonResource, "nonResourceAttributes")) ok = false;
      else if (f == 3) set_str(spec, "user", w, a);
      else if (f == 4) groups.PushBack(str(w, a), a);
    });
    if (!spec_parsed) ok = false;
  });
  if (!parsed || !ok) return bad();
  if (!groups.Empty()) spec.AddMember("groups", groups, a);
  d.AddMember("spec", spec, a);
  return d;
}

}  // namespace spotshift::kubesim
