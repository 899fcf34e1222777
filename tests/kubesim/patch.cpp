#include "patch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace spotshift::kubesim {

std::optional<PatchType> patch_type_from(std::string_view ct) {
  auto semi = ct.find(';');
  if (semi != std::string_view::npos) ct = ct.substr(0, semi);
  if (ct == "application/merge-patch+json") return PatchType::kMerge;
  if (ct == "application/strategic-merge-patch+json") return PatchType::kStrategic;
  if (ct == "application/json-patch+json") return PatchType::kJson;
  if (ct == "application/apply-patch+yaml" || ct == "application/apply-patch+json") return PatchType::kApply;
  return std::nullopt;
}

bool json_equal(const Value& a, const Value& b) {
  if (a.IsNumber() && b.IsNumber()) {
    if (a.IsInt64() && b.IsInt64()) return a.GetInt64() == b.GetInt64();
    return a.GetDouble() == b.GetDouble();
  }
  if (a.GetType() != b.GetType()) return false;
  if (a.IsObject()) {
    if (a.MemberCount() != b.MemberCount()) return false;
    for (auto it = a.MemberBegin(); it != a.MemberEnd(); ++it) {
      auto other = b.FindMember(it->name);
      if (other == b.MemberEnd() || !json_equal(it->value, other->value)) return false;
    }
    return true;
  }
  if (a.IsArray()) {
    if (a.Size() != b.Size()) return false;
    for (rapidjson::SizeType i = 0; i < a.Size(); ++i)
      if (!json_equal(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

void merge_patch(Value& target, const Value& patch, Alloc& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  for (auto it = patch.MemberBegin(); it != patch.MemberEnd(); ++it) {
    std::string_view key(it->name.GetString(), it->name.GetStringLength());
    if (it->value.IsNull()) {
      drop_field(target, key);
      continue;
    }
    Value* existing = get_mut(target, key);
    if (!existing) existing = &set(target, key, Value(rapidjson::kNullType), a);
    merge_patch(*existing, it->value, a);
  }
}

namespace {

// Lists whose elements merge by a key; keyed by the list's field name.
const std::map<std::string_view, std::string_view>& merge_keys() {
  static const std::map<std::string_view, std::string_view> keys = {
      {"containers", "name"},
      {"initContainers", "name"},
      {"ephemeralContainers", "name"},
      {"volumes", "name"},
      {"env", "name"},
      {"volumeMounts", "mountPath"},
      {"ports", "containerPort"},
      {"conditions", "type"},
      {"ownerReferences", "uid"},
      {"imagePullSecrets", "name"},
      {"addresses", "type"},
      {"hostAliases", "ip"},
      {"resourceClaims", "name"},
      {"readinessGates", "conditionType"},
  };
  return keys;
}

bool is_primitive_set(std::string_view field) { return field == "finalizers"; }

Result<void> smp(Value& target, const Value& patch, Alloc& a);

Result<void> smp_list(Value& target, const Value& patch, std::string_view list_name, Alloc& a) {
  auto key_it = merge_keys().find(list_name);
  if (is_primitive_set(list_name)) {
    if (!target.IsArray()) target.SetArray();
    for (const auto& v : patch.GetArray()) {
      bool present = false;
      for (const auto& t : target.GetArray()) present = present || json_equal(t, v);
      if (!present) target.PushBack(copy_of(v, a), a);
    }
    return {};
  }
  if (key_it == merge_keys().end()) {
    // No merge key: replace wholesale, after dropping any directive elements.
    Value out(rapidjson::kArrayType);
    for (const auto& v : patch.GetArray())
      if (!(v.IsObject() && json_member(v, "$patch"))) out.PushBack(copy_of(v, a), a);
    target = std::move(out);
    return {};
  }
  std::string_view key = key_it->second;
  // A {"$patch": "replace"} element replaces the whole list with the other elements.
  for (const auto& v : patch.GetArray()) {
    if (v.IsObject() && json_string(v, {"$patch"}) == "replace") {
      Value out(rapidjson::kArrayType);
      for (const auto& w : patch.GetArray())
        if (!(w.IsObject() && json_member(w, "$patch"))) out.PushBack(copy_of(w, a), a);
      target = std::move(out);
      return {};
    }
  }
  if (!target.IsArray()) target.SetArray();
  for (const auto& v : patch.GetArray()) {
    if (!v.IsObject()) return Error::invalid(fmt::format("list {} needs objects with the merge key \"{}\"", list_name, key));
    const Value* kv = json_member(v, key);
    if (!kv) return Error::invalid(fmt::format("map in list {} is missing the merge key \"{}\"", list_name, key));
    Value* match = nullptr;
    rapidjson::SizeType match_index = 0;
    for (rapidjson::SizeType i = 0; i < target.Size(); ++i) {
      const Value* tk = json_member(target[i], key);
      if (tk && json_equal(*tk, *kv)) {
        match = &target[i];
        match_index = i;
        break;
      }
    }
    std::string_view directive = json_string(v, {"$patch"});
    if (directive == "delete") {
      if (match) target.Erase(target.Begin() + match_index);
      continue;
    }
    if (match) {
      if (auto r = smp(*match, v, a); !r) return r;
    } else {
      Value fresh(rapidjson::kObjectType);
      if (auto r = smp(fresh, v, a); !r) return r;
      target.PushBack(fresh, a);
    }
  }
  return {};
}

Result<void> smp(Value& target, const Value& patch, Alloc& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return {};
  }
  std::string_view directive = json_string(patch, {"$patch"});
  if (directive == "replace") {
    target.CopyFrom(patch, a);
    drop_field(target, "$patch");
    return {};
  }
  if (directive == "delete") {
    target.SetNull();
    return {};
  }
  if (!target.IsObject()) target.SetObject();
  for (auto it = patch.MemberBegin(); it != patch.MemberEnd(); ++it) {
    std::string_view key(it->name.GetString(), it->name.GetStringLength());
    if (key == "$patch" || key == "$retainKeys" || key.starts_with("$setElementOrder/")) continue;
    if (key.starts_with("$deleteFromPrimitiveList/")) {
      Value* list = get_mut(target, key.substr(std::string_view("$deleteFromPrimitiveList/").size()));
      if (list && list->IsArray() && it->value.IsArray()) {
        for (const auto& gone : it->value.GetArray())
          for (auto e = list->Begin(); e != list->End();) e = json_equal(*e, gone) ? list->Erase(e) : e + 1;
      }
      continue;
    }
    if (it->value.IsNull()) {
      drop_field(target, key);
      continue;
    }
    Value* existing = get_mut(target, key);
    if (!existing) existing = &set(target, key, Value(rapidjson::kNullType), a);
    if (it->value.IsArray()) {
      if (auto r = smp_list(*existing, it->value, key, a); !r) return r;
    } else if (auto r = smp(*existing, it->value, a); !r) {
      return r;
    }
    if (existing->IsNull()) drop_field(target, key);
  }
  return {};
}

// JSON pointer navigation: returns the parent container and the last token.
struct Pointer {
  std::vector<std::string> tokens;
};

Result<Pointer> parse_pointer(std::string_view p) {
  Pointer out;
  if (p.empty()) return out;
  if (p[0] != '/') return Error::invalid(fmt::format("invalid JSON pointer \"{}\"", p));
  std::string cur;
  for (size_t i = 1; i <= p.size(); ++i) {
    if (i == p.size() || p[i] == '/') {
      out.tokens.push_back(cur);
      cur.clear();
    } else if (p[i] == '~' && i + 1 < p.size() && (p[i + 1] == '0' || p[i + 1] == '1')) {
      cur += p[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      cur += p[i];
    }
  }
  return out;
}

std::optional<size_t> array_index(const std::string& token, size_t size, bool allow_end) {
  if (allow_end && token == "-") return size;
  if (token.empty() || token.size() > 9 || !std::all_of(token.begin(), token.end(), ::isdigit)) return std::nullopt;
  size_t i = std::stoul(token);
  if (i > size || (!allow_end && i == size)) return std::nullopt;
  return i;
}

Value* resolve(Value& root, const std::vector<std::string>& tokens, size_t count) {
  Value* cur = &root;
  for (size_t i = 0; i < count; ++i) {
    if (cur->IsObject()) {
      cur = get_mut(*cur, tokens[i]);
    } else if (cur->IsArray()) {
      auto idx = array_index(tokens[i], cur->Size(), false);
      cur = idx ? &(*cur)[static_cast<rapidjson::SizeType>(*idx)] : nullptr;
    } else {
      cur = nullptr;
    }
    if (!cur) return nullptr;
  }
  return cur;
}

Error missing(std::string_view path) { return Error::invalid(fmt::format("doc is missing path: \"{}\": missing value", path)); }

Result<void> op_add(Value& root, const Pointer& p, std::string_view path, Value v, Alloc& a) {
  if (p.tokens.empty()) {
    root = std::move(v);
    return {};
  }
  Value* parent = resolve(root, p.tokens, p.tokens.size() - 1);
  if (!parent) return missing(path);
  const std::string& last = p.tokens.back();
  if (parent->IsObject()) {
    set(*parent, last, std::move(v), a);
  } else if (parent->IsArray()) {
    auto idx = array_index(last, parent->Size(), true);
    if (!idx) return missing(path);
    parent->PushBack(Value(), a);
    for (size_t i = parent->Size() - 1; i > *idx; --i) (*parent)[rapidjson::SizeType(i)] = std::move((*parent)[rapidjson::SizeType(i - 1)]);
    (*parent)[rapidjson::SizeType(*idx)] = std::move(v);
  } else {
    return missing(path);
  }
  return {};
}

Result<Value> op_remove(Value& root, const Pointer& p, std::string_view path, Alloc& a) {
  if (p.tokens.empty()) return Error::invalid("cannot remove the whole document");
  Value* parent = resolve(root, p.tokens, p.tokens.size() - 1);
  if (!parent) return missing(path);
  const std::string& last = p.tokens.back();
  Value out;
  if (parent->IsObject()) {
    Value* v = get_mut(*parent, last);
    if (!v) return missing(path);
    out.CopyFrom(*v, a);
    parent->EraseMember(json_key(last));
  } else if (parent->IsArray()) {
    auto idx = array_index(last, parent->Size(), false);
    if (!idx) return missing(path);
    out.CopyFrom((*parent)[rapidjson::SizeType(*idx)], a);
    parent->Erase(parent->Begin() + *idx);
  } else {
    return missing(path);
  }
  return out;
}

}  // namespace

Result<void> strategic_merge_patch(Value& target, const Value& patch, Alloc& a) {
  if (!patch.IsObject()) return Error::invalid("a strategic merge patch must be a JSON object");
  return smp(target, patch, a);
}

Result<void> json_patch(Value& target, const Value& ops, Alloc& a) {
  if (!ops.IsArray()) return Error::invalid("a JSON patch must be an array of operations");
  for (const auto& op : ops.GetArray()) {
    std::string_view kind = json_string(op, {"op"});
    std::string_view path = json_string(op, {"path"});
    auto ptr = parse_pointer(path);
    if (!ptr) return ptr.error();
    if (kind == "add" || kind == "replace" || kind == "test") {
      const Value* value = get_mut(const_cast<Value&>(op), "value");
      if (!value) return Error::invalid(fmt::format("{} operation on \"{}\" has no value", kind, path));
      if (kind == "test") {
        Value* cur = resolve(target, ptr->tokens, ptr->tokens.size());
        if (!cur || !json_equal(*cur, *value)) return Error::invalid(fmt::format("testing value {} failed: test failed", path));
        continue;
      }
      if (kind == "replace" && !resolve(target, ptr->tokens, ptr->tokens.size())) return missing(path);
      if (kind == "replace") {
        auto removed = op_remove(target, *ptr, path, a);
        if (!removed) return removed.error();
      }
      Value copy;
      copy.CopyFrom(*value, a);
      if (auto r = op_add(target, *ptr, path, std::move(copy), a); !r) return r;
    } else if (kind == "remove") {
      if (auto r = op_remove(target, *ptr, path, a); !r) return r.error();
    } else if (kind == "move" || kind == "copy") {
      std::string_view from = json_string(op, {"from"});
      auto fptr = parse_pointer(from);
      if (!fptr) return fptr.error();
      Value v;
      if (kind == "move") {
        auto removed = op_remove(target, *fptr, from, a);
        if (!removed) return removed.error();
        v = std::move(*removed);
      } else {
        Value* src = resolve(target, fptr->tokens, fptr->tokens.size());
        if (!src) return missing(from);
        v.CopyFrom(*src, a);
      }
      if (auto r = op_add(target, *ptr, path, std::move(v), a); !r) return r;
    } else {
      return Error::invalid(fmt::format("unexpected kind of operation \"{}\"", kind));
    }
  }
  return {};
}

}  // namespace spotshift::kubesim
