#include "json_util.hpp"

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <vector>

namespace spotshift::kubesim {

Result<void> parse_into(std::string_view text, Doc& doc) {
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError())
    return Error::decode(fmt::format("invalid JSON at offset {}: {}", doc.GetErrorOffset(),
                                     rapidjson::GetParseError_En(doc.GetParseError())));
  return {};
}

namespace {

void write_canonical(const Value& v, rapidjson::Writer<rapidjson::StringBuffer>& w) {
  if (v.IsObject()) {
    std::vector<const Value::Member*> members;
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it)
      if (!it->value.IsNull()) members.push_back(&*it);
    std::sort(members.begin(), members.end(), [](const Value::Member* a, const Value::Member* b) {
      return std::string_view(a->name.GetString(), a->name.GetStringLength()) <
             std::string_view(b->name.GetString(), b->name.GetStringLength());
    });
    w.StartObject();
    for (const auto* m : members) {
      w.Key(m->name.GetString(), m->name.GetStringLength());
      write_canonical(m->value, w);
    }
    w.EndObject();
  } else if (v.IsArray()) {
    w.StartArray();
    for (const auto& e : v.GetArray()) write_canonical(e, w);
    w.EndArray();
  } else {
    v.Accept(w);
  }
}

}  // namespace

std::string canonical_json(const Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  write_canonical(v, w);
  return std::string(buf.GetString(), buf.GetSize());
}

std::string to_json(const Value& v) {
  thread_local rapidjson::StringBuffer buf;  // keeps its capacity: no regrowth per object written
  buf.Clear();
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  std::string out(buf.GetString(), buf.GetSize());
  if (buf.GetSize() > (1u << 20)) {  // a big list's text is not kept per thread
    buf.Clear();
    buf.ShrinkToFit();
  }
  return out;
}

const Value* field(const Value& v, std::string_view key) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(ref(key));
  if (it == v.MemberEnd() || it->value.IsNull()) return nullptr;
  return &it->value;
}

Value* get_mut(Value& v, std::string_view key) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(ref(key));
  if (it == v.MemberEnd()) return nullptr;
  return &it->value;
}

const Value* get_path(const Value& v, std::initializer_list<std::string_view> path) {
  const Value* cur = &v;
  for (auto key : path) {
    cur = field(*cur, key);
    if (!cur) return nullptr;
  }
  return cur;
}

std::string_view get_str(const Value& v, std::initializer_list<std::string_view> path, std::string_view fallback) {
  const Value* x = get_path(v, path);
  if (!x || !x->IsString()) return fallback;
  return std::string_view(x->GetString(), x->GetStringLength());
}

std::optional<int64_t> get_int(const Value& v, std::initializer_list<std::string_view> path) {
  const Value* x = get_path(v, path);
  if (!x || !x->IsInt64()) return std::nullopt;
  return x->GetInt64();
}

bool get_bool(const Value& v, std::initializer_list<std::string_view> path, bool fallback) {
  const Value* x = get_path(v, path);
  if (!x || !x->IsBool()) return fallback;
  return x->GetBool();
}

Value& set(Value& obj, std::string_view key, Value&& v, Alloc& a) {
  auto it = obj.FindMember(ref(key));
  if (it != obj.MemberEnd()) {
    it->value = std::move(v);
    return it->value;
  }
  obj.AddMember(str(key, a), std::move(v), a);
  return (obj.MemberEnd() - 1)->value;
}

void set_str(Value& obj, std::string_view key, std::string_view s, Alloc& a) { set(obj, key, str(s, a), a); }
void set_int(Value& obj, std::string_view key, int64_t n, Alloc& a) { set(obj, key, Value(n), a); }
void set_bool(Value& obj, std::string_view key, bool b, Alloc& a) { set(obj, key, Value(b), a); }

Value& ensure_object(Value& obj, std::string_view key, Alloc& a) {
  auto it = obj.FindMember(ref(key));
  if (it != obj.MemberEnd() && it->value.IsObject()) return it->value;
  return set(obj, key, Value(rapidjson::kObjectType), a);
}

Value& ensure_array(Value& obj, std::string_view key, Alloc& a) {
  auto it = obj.FindMember(ref(key));
  if (it != obj.MemberEnd() && it->value.IsArray()) return it->value;
  return set(obj, key, Value(rapidjson::kArrayType), a);
}

void drop_field(Value& obj, std::string_view key) {
  if (obj.IsObject()) obj.EraseMember(ref(key));  // EraseMember keeps the order; RemoveMember swaps
}

Value copy_of(const Value& v, Alloc& a) {
  Value out;
  out.CopyFrom(v, a);
  return out;
}

std::string_view name_of(const Value& obj) { return get_str(obj, {"metadata", "name"}); }
std::string_view namespace_of(const Value& obj) { return get_str(obj, {"metadata", "namespace"}); }

}  // namespace spotshift::kubesim
