#include "json_util.hpp"

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <vector>

namespace spotshift::kubesim {

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

namespace {
// The length of the valid UTF-8 sequence at p (utf8.DecodeRune's rules: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0.
size_t utf8_sequence(const unsigned char* p, size_t n) {
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) { return i < n && p[i] >= lo && p[i] <= hi; };
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c >= 0xE1 && c <= 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}
}  // namespace

std::optional<std::string> go_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::string out;
  size_t copied = 0;  // s[0, copied) is in out; 0 while s is valid so far
  for (size_t i = 0; i < s.size();) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    if (const size_t n = utf8_sequence(p + i, s.size() - i); n > 0) {
      i += n;
      continue;
    }
    out.append(s.substr(copied, i - copied)).append("\xEF\xBF\xBD");  // U+FFFD for the one byte
    copied = ++i;
  }
  if (copied == 0) return std::nullopt;
  return out.append(s.substr(copied));
}

Value* get_mut(Value& v, std::string_view key) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(json_key(key));
  if (it == v.MemberEnd()) return nullptr;
  return &it->value;
}

Value& set(Value& obj, std::string_view key, Value&& v, Alloc& a) {
  auto it = obj.FindMember(json_key(key));
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

void set_count(Value& obj, std::string_view key, int64_t n, Alloc& a) {
  if (n != 0) set_int(obj, key, n, a);
  else drop_field(obj, key);
}

Value& ensure_object(Value& obj, std::string_view key, Alloc& a) {
  auto it = obj.FindMember(json_key(key));
  if (it != obj.MemberEnd() && it->value.IsObject()) return it->value;
  return set(obj, key, Value(rapidjson::kObjectType), a);
}

Value& ensure_array(Value& obj, std::string_view key, Alloc& a) {
  auto it = obj.FindMember(json_key(key));
  if (it != obj.MemberEnd() && it->value.IsArray()) return it->value;
  return set(obj, key, Value(rapidjson::kArrayType), a);
}

Value& ensure_condition(Value& status, std::string_view type, Alloc& a) {
  Value& conds = ensure_array(status, "conditions", a);
  for (auto& c : conds.GetArray())
    if (json_string(c, {"type"}) == type) return c;
  Value c(rapidjson::kObjectType);
  set_str(c, "type", type, a);
  conds.PushBack(c, a);
  return conds[conds.Size() - 1];
}

void drop_field(Value& obj, std::string_view key) {
  if (obj.IsObject()) obj.EraseMember(json_key(key));  // EraseMember keeps the order; RemoveMember swaps
}

Value copy_of(const Value& v, Alloc& a) {
  Value out;
  out.CopyFrom(v, a);
  return out;
}

std::string_view name_of(const Value& obj) { return json_string(obj, {"metadata", "name"}); }
std::string_view namespace_of(const Value& obj) { return json_string(obj, {"metadata", "namespace"}); }

model::Labels labels_of(const Value& obj) {
  model::Labels out;
  if (const Value* l = json_path(obj, {"metadata", "labels"}); l && l->IsObject())
    for (auto it = l->MemberBegin(); it != l->MemberEnd(); ++it)
      if (it->value.IsString())
        out.set(std::string_view(it->name.GetString(), it->name.GetStringLength()),
                std::string_view(it->value.GetString(), it->value.GetStringLength()));
  return out;
}

std::optional<model::LabelSelector> label_selector_of(const Value& obj, std::string_view key) {
  const Value* v = json_member(obj, key);
  if (!v) return std::nullopt;
  std::string text = to_json(*v);
  model::JsonReader r(text);
  model::JsonDecoder d("selector");
  auto selector = d.label_selector(r);
  if (!d.ok()) return std::nullopt;
  return selector;
}

std::optional<model::IntOrString> int_or_percent(const Value* v) {
  if (!v || v->IsNull()) return std::nullopt;
  if (v->IsInt()) return model::IntOrString{false, v->GetInt()};
  if (v->IsString())
    if (auto parsed = model::IntOrString::parse(std::string_view(v->GetString(), v->GetStringLength())); parsed && parsed->is_percent)
      return *parsed;
  return model::IntOrString{};
}

}  // namespace spotshift::kubesim
