#include "watch.hpp"

#include "events.hpp"
#include "table.hpp"

#include <fmt/format.h>

namespace spotshift::kubesim {

std::optional<std::string> field_value(const Value& obj, std::string_view path) {
  if (path == "source") path = "source.component";  // events: "source" selects source.component
  const Value* cur = &obj;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string_view part = path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    cur = json_member(*cur, part);
    if (!cur) return std::string();
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (cur->IsString()) return std::string(cur->GetString(), cur->GetStringLength());
  if (cur->IsBool()) return std::string(cur->GetBool() ? "true" : "false");
  if (cur->IsInt64()) return std::to_string(cur->GetInt64());
  return std::string();
}

namespace {
std::string expired_event(uint64_t rv, uint64_t oldest) {
  return fmt::format(
             R"json({{"type":"ERROR","object":{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"too old resource version: {} ({})","reason":"Expired","code":410}}}})json",
             rv, oldest) +
         "\n";
}
}  // namespace

WatchStream::WatchStream(Cluster& cluster, WatchSpec spec)
    : cluster_(cluster), spec_(std::move(spec)), cursor_(cluster.store().resource_version()) {
  if (!spec_.initial) cursor_ = spec_.from_rv;
}

bool WatchStream::matches(const StoredObject& obj) const {
  if (!spec_.ns.empty() && namespace_of(obj.doc) != spec_.ns) return false;
  if (spec_.labels && !spec_.labels->empty() && !spec_.labels->matches(labels_of(obj.doc))) return false;
  if (spec_.fields && !spec_.fields->empty() && !spec_.fields->matches([&](std::string_view f) { return field_value(obj.doc, f); }))
    return false;
  return true;
}

std::string WatchStream::render(const StoredObject& obj) const {
  if (spec_.table) return render_table(*spec_.rt, {&obj.doc}, cluster_.now(), "", "");
  if (spec_.rt->storage) {
    Doc out;
    core_event_to_new(obj.doc, out, out.GetAllocator());
    return to_json(out);
  }
  return obj.json;
}

void WatchStream::append(std::string& out, std::string_view type, const StoredObject& obj) {
  out += "{\"type\":\"";
  out += type;
  out += "\",\"object\":";
  out += render(obj);
  out += "}\n";
  ++sent_;
}

std::string WatchStream::poll() {
  std::string out;
  if (finished_) return out;
  const Store& store = cluster_.store();
  if (!started_) {
    started_ = true;
    if (spec_.expire_now || (!spec_.initial && !store.can_resume(spec_.from_rv))) {
      out += expired_event(spec_.from_rv, store.compacted_rv() + 1);
      finished_ = true;
      return out;
    }
    if (spec_.initial) {
      const auto& objs = store.objects(*spec_.rt);
      auto begin = spec_.ns.empty() || !spec_.rt->stored().namespaced ? objs.begin() : objs.lower_bound(spec_.ns + "/");
      for (auto it = begin; it != objs.end(); ++it) {
        if (!spec_.ns.empty() && spec_.rt->stored().namespaced && !it->first.starts_with(spec_.ns + "/")) break;
        if (matches(*it->second)) append(out, "ADDED", *it->second);
      }
      if (spec_.initial_events_end && spec_.bookmarks) {
        out += fmt::format(
            R"({{"type":"BOOKMARK","object":{{"kind":"{}","apiVersion":"{}","metadata":{{"resourceVersion":"{}","annotations":{{"k8s.io/initial-events-end":"true"}}}}}}}})",
            spec_.rt->kind, spec_.rt->group_version(), cursor_);
        out += '\n';
      }
    }
  }
  if (!store.can_resume(cursor_)) {
    // Fell out of the history window: the client must relist.
    out += expired_event(cursor_, store.compacted_rv() + 1);
    finished_ = true;
    return out;
  }
  const auto& history = store.history();
  const ResourceType* stored = &spec_.rt->stored();
  for (size_t i = store.first_after(cursor_); i < history.size(); ++i) {
    const Change& c = history[i];
    cursor_ = c.rv;
    if (c.rt != stored) continue;
    bool now_matches = c.type != EventType::kDeleted && matches(*c.obj);
    bool was_matching = c.prev && matches(*c.prev);
    if (c.type == EventType::kDeleted) {
      if (was_matching) append(out, "DELETED", *c.obj);
    } else if (now_matches && was_matching) {
      append(out, "MODIFIED", *c.obj);
    } else if (now_matches) {
      append(out, "ADDED", *c.obj);
    } else if (was_matching) {
      append(out, "DELETED", *c.obj);
    }
  }
  return out;
}

std::string WatchStream::bookmark() {
  // Send what is pending first: a bookmark promises everything up to its resourceVersion.
  std::string out = poll();
  if (!spec_.bookmarks || finished_) return out;
  out += fmt::format(R"({{"type":"BOOKMARK","object":{{"kind":"{}","apiVersion":"{}","metadata":{{"resourceVersion":"{}"}}}}}})",
                     spec_.rt->kind, spec_.rt->group_version(), cursor_);
  out += '\n';
  return out;
}

}  // namespace spotshift::kubesim
