#include "delete_options.hpp"

#include "core/strings.hpp"
#include "json_util.hpp"

#include <fmt/format.h>

#include <span>

namespace spotshift::kubesim {

namespace {

// A minimal protobuf reader: varints and length-delimited fields are all DeleteOptions uses.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }

  bool next(uint32_t& field, uint32_t& wire) {
    uint64_t tag;
    if (!varint(tag)) return false;
    field = static_cast<uint32_t>(tag >> 3);
    wire = static_cast<uint32_t>(tag & 7);
    return true;
  }
  bool varint(uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return false;
      uint8_t b = static_cast<uint8_t>(data_[pos_++]);
      out |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool bytes(std::string_view& out) {
    uint64_t n;
    if (!varint(n) || n > data_.size() - pos_) return false;
    out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool skip(uint32_t wire) {
    uint64_t v;
    std::string_view s;
    switch (wire) {
      case 0:
        return varint(v);
      case 1:
        return advance(8);
      case 2:
        return bytes(s);
      case 5:
        return advance(4);
      default:
        return false;
    }
  }

 private:
  bool advance(size_t n) {
    if (n > data_.size() - pos_) return false;
    pos_ += n;
    return true;
  }
  std::string_view data_;
  size_t pos_ = 0;
};

// Calls on(field, bytes) for each length-delimited field of a message and skips the others;
// false when the message is malformed.
template <class F>
bool each_bytes_field(std::string_view msg, F&& on) {
  ProtoReader r(msg);
  uint32_t field, wire;
  while (!r.done()) {
    std::string_view v;
    if (!r.next(field, wire)) return false;
    if (wire != 2) {
      if (!r.skip(wire)) return false;
      continue;
    }
    if (!r.bytes(v)) return false;
    on(field, v);
  }
  return true;
}

Error malformed() { return Error::invalid("malformed protobuf DeleteOptions body"); }

// The raw object inside the "k8s\0" + runtime.Unknown envelope (field 2).
bool unwrap(std::string_view body, std::string_view& raw) {
  static constexpr std::string_view kMagic("k8s\0", 4);
  if (!body.starts_with(kMagic)) return false;
  return each_bytes_field(body.substr(4), [&](uint32_t field, std::string_view v) {
    if (field == 2) raw = v;
  });
}

// A map<string,string> entry: key = 1, value = 2.
bool map_entry(std::string_view entry, std::string& key, std::string& value) {
  return each_bytes_field(entry, [&](uint32_t field, std::string_view s) {
    if (field == 1 || field == 2) (field == 1 ? key : value) = std::string(s);
  });
}

}  // namespace

namespace {

// ObjectMeta's fields a create sends (name 1, generateName 2, namespace 3, labels 11,
// annotations 12) into a JSON metadata object.
bool object_meta(std::string_view msg, Value& meta, Alloc& a) {
  Value labels(rapidjson::kObjectType), annotations(rapidjson::kObjectType);
  bool ok = each_bytes_field(msg, [&](uint32_t f, std::string_view v) {
    std::string key, value;
    if (f == 1) set_str(meta, "name", std::string(v), a);
    else if (f == 2) set_str(meta, "generateName", std::string(v), a);
    else if (f == 3) set_str(meta, "namespace", std::string(v), a);
    else if ((f == 11 || f == 12) && map_entry(v, key, value)) set_str(f == 11 ? labels : annotations, key, value, a);
  });
  if (labels.MemberCount()) meta.AddMember("labels", labels, a);
  if (annotations.MemberCount()) meta.AddMember("annotations", annotations, a);
  return ok;
}

Doc typed_doc(std::string_view kind) {
  Doc d(rapidjson::kObjectType);
  set_str(d, "apiVersion", "v1", d.GetAllocator());
  set_str(d, "kind", kind, d.GetAllocator());
  return d;
}

}  // namespace

Result<Doc> decode_namespace_protobuf(std::string_view body) {
  auto bad = [] { return Error::api(400, "BadRequest", "the request body is not a valid protobuf Namespace"); };
  std::string_view raw;
  if (!unwrap(body, raw)) return bad();
  Doc d = typed_doc("Namespace");
  auto& a = d.GetAllocator();
  Value meta(rapidjson::kObjectType), finalizers(rapidjson::kArrayType);
  bool ok = true;
  bool parsed = each_bytes_field(raw, [&](uint32_t field, std::string_view s) {
    if (field == 1) {
      ok = object_meta(s, meta, a) && ok;
    } else if (field == 2) {  // NamespaceSpec: finalizers = 1
      ok = each_bytes_field(s,
                            [&](uint32_t f, std::string_view v) {
                              if (f == 1) finalizers.PushBack(Value(std::string(v).c_str(), a), a);
                            }) &&
           ok;
    }
  });
  if (!parsed || !ok) return bad();
  d.AddMember("metadata", meta, a);
  if (!finalizers.Empty()) {
    Value spec(rapidjson::kObjectType);
    spec.AddMember("finalizers", finalizers, a);
    d.AddMember("spec", spec, a);
  }
  return d;
}

Result<Doc> decode_config_protobuf(std::string_view body, std::string_view kind) {
  auto bad = [&] { return Error::api(400, "BadRequest", fmt::format("the request body is not a valid protobuf {}", kind)); };
  std::string_view raw;
  if (!unwrap(body, raw)) return bad();
  const bool secret = kind == "Secret";
  Doc d = typed_doc(kind);
  auto& a = d.GetAllocator();
  Value meta(rapidjson::kObjectType), data(rapidjson::kObjectType), binary(rapidjson::kObjectType), string_data(rapidjson::kObjectType);
  bool ok = true;
  // ConfigMap: metadata 1, data 2 (map<string,string>), binaryData 3 (map<string,bytes>),
  // immutable 4. Secret: metadata 1, data 2 (map<string,bytes>), type 3, stringData 4, immutable 5.
  ProtoReader r(raw);
  uint32_t field, wire;
  while (!r.done()) {
    if (!r.next(field, wire)) return bad();
    if (wire == 0) {
      uint64_t v;
      if (!r.varint(v)) return bad();
      if (field == (secret ? 5u : 4u)) set_bool(d, "immutable", v != 0, a);
      continue;
    }
    if (wire != 2) {
      if (!r.skip(wire)) return bad();
      continue;
    }
    std::string_view s;
    if (!r.bytes(s)) return bad();
    std::string key, value;
    if (field == 1) ok = object_meta(s, meta, a) && ok;
    else if (secret && field == 3) set_str(d, "type", s, a);
    else if (field == 2 || field == 3 || field == 4) {
      if (!map_entry(s, key, value)) return bad();
      // JSON carries bytes as base64.
      if (secret && field == 2) set_str(data, key, base64_encode(value), a);
      else if (field == 2) set_str(data, key, value, a);
      else if (field == 3) set_str(binary, key, base64_encode(value), a);
      else set_str(string_data, key, value, a);
    }
  }
  if (!ok) return bad();
  d.AddMember("metadata", meta, a);
  if (data.MemberCount()) d.AddMember("data", data, a);
  if (binary.MemberCount()) d.AddMember("binaryData", binary, a);
  if (string_data.MemberCount()) d.AddMember("stringData", string_data, a);
  return d;
}

Result<DeleteOptions> decode_delete_options_protobuf(std::string_view body) {
  std::string_view raw;
  if (!unwrap(body, raw)) return malformed();
  uint32_t field, wire;
  DeleteOptions out;
  ProtoReader r(raw);
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
  std::string_view raw;
  if (!unwrap(body, raw)) return bad();
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
