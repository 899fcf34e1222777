#include "api.hpp"

#include "core/strings.hpp"
#include "delete_options.hpp"
#include "events.hpp"
#include "protobuf.hpp"
#include "table.hpp"
#include "yaml_json.hpp"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <random>
#include <set>

namespace spotshift::kubesim {

namespace {

std::string query(const HttpRequest& r, const char* key) {
  auto it = r.query.find(key);
  return it == r.query.end() ? std::string() : it->second;
}

bool flag(const HttpRequest& r, const char* key) {
  auto it = r.query.find(key);
  return it != r.query.end() && parse_bool(it->second).value_or(false);
}

// /healthz, /livez and /readyz as kube-apiserver serves them: "ok"; with `verbose`, each check on
// a line ("[+]ping ok", "[+]etcd excluded: ok" for one named by `exclude`, a warning for an
// excluded name that matches none) and "readyz check passed"; /readyz/<check> asks for one check,
// and an unknown one is 404. kubesim lists the checks that apply to it: ping and log, and for
// readiness shutdown (it has no etcd and no post-start hooks). nullopt: not a health path.
std::optional<HttpResponse> health(const HttpRequest& req) {
  std::string_view path = req.path;
  for (std::string_view endpoint : {"healthz", "livez", "readyz"}) {
    if (!path.starts_with("/") || path.substr(1, endpoint.size()) != endpoint) continue;
    std::string_view rest = path.substr(1 + endpoint.size());
    if (!rest.empty() && rest[0] != '/') continue;
    std::vector<std::string_view> checks = {"ping", "log"};
    if (endpoint == "readyz") checks.emplace_back("shutdown");
    HttpResponse r;
    r.content_type = "text/plain; charset=utf-8";
    r.headers.emplace_back("X-Content-Type-Options", "nosniff");
    if (!rest.empty()) {
      if (std::find(checks.begin(), checks.end(), rest.substr(1)) == checks.end()) {
        r.status = 404;
        r.body = "404 page not found\n";
      } else {
        r.body = "ok";
      }
      return r;
    }
    if (!req.query.contains("verbose")) {
      r.body = "ok";
      return r;
    }
    std::vector<std::string> excluded;
    for (auto part : split(req.raw_query, '&')) {
      const size_t eq = part.find('=');
      if (part.substr(0, eq) != "exclude" || eq == std::string_view::npos) continue;
      if (auto name = url_decode(part.substr(eq + 1), true); name && !name->empty()) excluded.push_back(*name);
    }
    for (std::string_view check : checks) {
      auto it = std::find(excluded.begin(), excluded.end(), check);
      r.body += fmt::format("[+]{} {}ok\n", check, it == excluded.end() ? "" : "excluded: ");
      std::erase(excluded, std::string(check));
    }
    if (!excluded.empty()) {
      std::sort(excluded.begin(), excluded.end());
      excluded.erase(std::unique(excluded.begin(), excluded.end()), excluded.end());
      std::vector<std::string> quoted;
      for (const auto& e : excluded) quoted.push_back(fmt::format("\"{}\"", e));
      r.body += fmt::format("warn: some health checks cannot be excluded: no matches for {}\n", fmt::join(quoted, ", "));
    }
    r.body += fmt::format("{} check passed\n", endpoint);
    return r;
  }
  return std::nullopt;
}

bool wants_table(const HttpRequest& r) { return r.accept.find("as=Table") != std::string::npos; }
bool wants_partial(const HttpRequest& r) { return r.accept.find("as=PartialObjectMetadata") != std::string::npos; }

constexpr const char* kTableType = "application/json;as=Table;v=v1;g=meta.k8s.io";

WriteOptions write_options(const HttpRequest& r, std::vector<std::string>* warnings) {
  WriteOptions o;
  o.dry_run = !query(r, "dryRun").empty();
  o.field_validation = query(r, "fieldValidation");
  o.warnings = warnings;
  return o;
}

void add_warnings(HttpResponse& resp, const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) resp.headers.emplace_back("Warning", fmt::format("299 - \"{}\"", w));
}

// Continue tokens: base64 of {"rv":N,"start":"lastKey","issued":unix seconds}.
std::string encode_continue(uint64_t rv, std::string_view last_key) {
  Doc d(rapidjson::kObjectType);
  set_int(d, "rv", static_cast<int64_t>(rv), d.GetAllocator());
  set_str(d, "start", last_key, d.GetAllocator());
  set_int(d, "issued", std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
          d.GetAllocator());
  return base64_encode(to_json(d));
}

// The body of a write: JSON, or YAML for content types that say so.
Result<Doc> parse_body(const HttpRequest& r) {
  std::string_view ct = r.content_type;
  if (ct.find("yaml") != std::string_view::npos) return parse_yaml(r.body);
  Doc d;
  const std::optional<std::string> replaced = go_utf8(r.body);
  if (auto p = parse_json(replaced ? *replaced : r.body, d); !p)
    return Error::api(400, "BadRequest", fmt::format("the request body is not valid JSON: {}", p.error().message));
  return d;
}

// The apiserver's answer to a field selector on a field the kind does not index: kinds with a
// field label conversion of their own (core Pods, Nodes, Namespaces, Secrets, Services, Events,
// and custom resources) say "field label not supported", the others fall back on metadata's.
std::string unsupported_field_message(const ResourceType& rt, std::string_view f) {
  static const std::set<std::string_view> kOwnConversion = {"pods",  "nodes", "namespaces", "secrets", "services", "replicationcontrollers",
                                                            "events"};
  if (rt.crd || ((rt.group.empty() || rt.group == "events.k8s.io") && kOwnConversion.count(rt.plural)))
    return fmt::format("field label not supported: {}", f);
  return fmt::format(R"("{}" is not a known field selector: only "metadata.name", "metadata.namespace")", f);
}

// A create's body. kubectl's create commands send built-in objects as protobuf, which kubesim
// decodes for the kinds it knows (protobuf.hpp); anything else is refused clearly instead of
// read as broken JSON.
Result<Doc> parse_create_body(const HttpRequest& r, const ResourceType& rt) {
  if (!r.content_type.starts_with("application/vnd.kubernetes.protobuf")) return parse_body(r);
  return decode_object_protobuf(r.body, rt.group, rt.kind);
}

}  // namespace

std::string success_status(int code) {
  return fmt::format(R"({{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Success","code":{}}})", code);
}

namespace {
// 201 with a Success Status: what an eviction or a binding answers.
HttpResponse created_status() {
  HttpResponse resp;
  resp.status = 201;
  resp.body = success_status(201);
  return resp;
}
}  // namespace

std::string status_body(const Error& e, const ResourceType* rt, std::string_view name) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  int code = e.code ? e.code : 500;
  w.StartObject();
  w.Key("kind");
  w.String("Status");
  w.Key("apiVersion");
  w.String("v1");
  w.Key("metadata");
  w.StartObject();
  w.EndObject();
  w.Key("status");
  w.String("Failure");
  w.Key("message");
  w.String(e.message);
  if (!e.reason.empty()) {
    w.Key("reason");
    w.String(e.reason);
  }
  // Invalid errors name their object only when they carry field causes (a failed JSON-patch test
  // does not, and kubectl then prints "The request is invalid: ...").
  bool named = rt && (code == 404 || code == 409 || (code == 422 && !e.causes.empty()));
  // Forbidden always names the resource, and the object when there is one.
  bool forbidden = rt && code == 403;
  if (named || forbidden || !e.causes.empty() || e.retry_after_seconds) {
    w.Key("details");
    w.StartObject();
    if (named || forbidden) {
      if (!name.empty()) {  // omitempty, as StatusDetails.name is
        w.Key("name");
        w.String(name.data(), static_cast<rapidjson::SizeType>(name.size()));
      }
      if (!rt->group.empty()) {
        w.Key("group");
        w.String(rt->group);
      }
      w.Key("kind");
      w.String(code == 422 ? rt->kind : rt->plural);
    }
    if (!e.causes.empty()) {
      w.Key("causes");
      w.StartArray();
      for (const auto& c : e.causes) {
        w.StartObject();
        w.Key("reason");
        w.String(c.reason);
        w.Key("message");
        w.String(c.message);
        if (!c.field.empty()) {
          w.Key("field");
          w.String(c.field);
        }
        w.EndObject();
      }
      w.EndArray();
    }
    if (e.retry_after_seconds) {
      w.Key("retryAfterSeconds");
      w.Int(*e.retry_after_seconds);
    }
    w.EndObject();
  }
  w.Key("code");
  w.Int(code);
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

Api::Api(Cluster& cluster, ApiOptions options) : cluster_(cluster), options_(std::move(options)) {}

HttpResponse Api::error(const Error& e, const Target& t) const {
  HttpResponse r;
  r.status = e.code ? e.code : 500;
  r.body = status_body(e, t.rt, t.name);
  if (e.retry_after_seconds) r.headers.emplace_back("Retry-After", std::to_string(*e.retry_after_seconds));
  return r;
}

std::string Api::render(const ResourceType& rt, const StoredObject& obj) const {
  if (!rt.storage) return obj.json;
  Doc out;
  core_event_to_new(obj.doc, out, out.GetAllocator());
  return to_json(out);
}

HttpResponse Api::object_response(int status, const Target& t, const StoredObject& obj, const HttpRequest& req) const {
  HttpResponse r;
  r.status = status;
  if (wants_table(req)) {
    r.content_type = kTableType;
    r.body = render_table(*t.rt, {&obj.doc}, cluster_.now(), json_string(obj.doc, {"metadata", "resourceVersion"}), "");
  } else {
    r.body = render(*t.rt, obj);
  }
  return r;
}

HttpResponse Api::handle(const HttpRequest& req) {
  if (!req.impersonate_user && req.impersonate_groups.empty()) return route(req);
  // Impersonation (kubectl --as, --as-group): the request is served as the impersonated user,
  // so RBAC applies to an impersonated service account. A requester that kubesim's RBAC does not
  // restrict may impersonate anyone; a service account needs the impersonate verb on the user
  // (or on the service account) and on each group, as the apiserver checks.
  // What is refused, as a Status naming the resource (users, groups or serviceaccounts have no
  // ResourceType here: a stand-in names them).
  auto refuse = [](const Error& e, std::string_view resource = {}, std::string_view object = {}) {
    ResourceType named;
    named.plural = std::string(resource);
    HttpResponse r;
    r.status = e.code;
    r.body = status_body(e, resource.empty() ? nullptr : &named, object);
    return r;
  };
  if (!req.impersonate_user)
    return refuse(
        Cluster::bad_request(fmt::format("requested groups [{}] without impersonating a user", fmt::join(req.impersonate_groups, ", "))));
  const std::string& name = *req.impersonate_user;
  if (req.user && !req.user->superuser()) {
    std::vector<RequestAttributes> needed;
    if (auto sa = service_account_of(name); sa && !sa->name.empty()) {
      needed.push_back({"impersonate", "", "serviceaccounts", "", std::string(sa->ns), std::string(sa->name)});
    } else {
      needed.push_back({"impersonate", "", "users", "", "", name});
    }
    for (const auto& g : req.impersonate_groups) needed.push_back({"impersonate", "", "groups", "", "", g});
    for (const auto& a : needed)
      if (!rbac_allows(cluster_.store(), cluster_.registry(), *req.user, a))
        return refuse(Error::api(403, "Forbidden", forbidden_message(*req.user, a)), a.resource, a.name);
  }
  UserInfo as{name, req.impersonate_groups};
  if (as.groups.empty() && as.is_service_account()) as.groups = service_account_groups(name);
  if (std::find(as.groups.begin(), as.groups.end(), "system:authenticated") == as.groups.end()) as.groups.push_back("system:authenticated");
  HttpRequest impersonated = req;
  impersonated.user = std::move(as);
  impersonated.impersonate_user.reset();
  impersonated.impersonate_groups.clear();
  return route(impersonated);
}

HttpResponse Api::route(const HttpRequest& req) {
  const std::string& p = req.path;
  if (p.starts_with("/_sim/")) return control(req);
  if (auto r = health(req)) return std::move(*r);
  std::vector<std::string> segs;
  for (auto s : split(p, '/'))
    if (!s.empty()) segs.emplace_back(s);
  // Resource paths: /api/v1/... and /apis/GROUP/VERSION/... with something after the version.
  size_t base = 0;
  std::string group, version;
  if (segs.size() >= 3 && segs[0] == "api") {
    version = segs[1];
    base = 2;
  } else if (segs.size() >= 4 && segs[0] == "apis") {
    group = segs[1];
    version = segs[2];
    base = 3;
  } else {
    return discovery(req);
  }
  std::vector<std::string> rest(segs.begin() + static_cast<long>(base), segs.end());
  Target t;
  if (!rest.empty() && rest[0] == "watch") {  // legacy /api/v1/watch/... paths
    t.legacy_watch = true;
    rest.erase(rest.begin());
  }
  if (rest.size() >= 3 && rest[0] == "namespaces" && rest[2] != "status" && rest[2] != "finalize") {
    t.ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty() || rest.size() > 3) {
    HttpResponse r;
    r.status = 404;
    r.body = status_body(Error::api(404, "NotFound", "the server could not find the requested resource"), nullptr, "");
    return r;
  }
  t.rt = cluster_.registry().find(group, version, rest[0]);
  if (!t.rt) {
    HttpResponse r;
    r.status = 404;
    r.body = status_body(Error::api(404, "NotFound", "the server could not find the requested resource"), nullptr, "");
    return r;
  }
  if (!t.rt->namespaced && !t.ns.empty()) {
    HttpResponse r;
    r.status = 404;
    r.body = status_body(Error::api(404, "NotFound", "the server could not find the requested resource"), nullptr, "");
    return r;
  }
  if (rest.size() >= 2) t.name = rest[1];
  if (rest.size() == 3) t.subresource = rest[2];
  if (!t.subresource.empty() && !t.rt->has_subresource(t.subresource)) {
    HttpResponse r;
    r.status = 404;
    r.body = status_body(Error::api(404, "NotFound", "the server could not find the requested resource"), nullptr, "");
    return r;
  }
  return resource(req, t);
}

HttpResponse Api::resource(const HttpRequest& req, const Target& t) {
  std::string verb;
  const std::string& m = req.method;
  bool watching = t.legacy_watch || flag(req, "watch");
  if (m == "GET") verb = t.name.empty() ? (watching ? "watch" : "list") : (watching ? "watch" : "get");
  else if (m == "POST") verb = "create";
  else if (m == "PUT") verb = "update";
  else if (m == "PATCH") verb = "patch";
  else if (m == "DELETE") verb = t.name.empty() ? "deletecollection" : "delete";
  std::string res = t.subresource.empty() ? t.rt->plural : t.rt->plural + "/" + t.subresource;

  HttpResponse resp;
  // Every authenticated user but system:masters members gets exactly what the cluster's RBAC
  // objects grant. Asking about oneself is open to every user, as the system:basic-user
  // ClusterRole makes it.
  const bool self_review = t.rt->review && t.rt->plural.starts_with("self");
  if (req.user && !req.user->superuser() && !verb.empty() && !self_review) {
    RequestAttributes attrs{verb, t.rt->group, t.rt->plural, t.subresource, t.ns, t.name};
    if (!rbac_allows(cluster_.store(), cluster_.registry(), *req.user, attrs)) {
      Error e = Error::api(403, "Forbidden", forbidden_message(*req.user, attrs));
      resp = error(e, t);
      resp.verb = verb;
      resp.resource = res;
      return resp;
    }
  }
  auto fault = cluster_.faults().match(verb, res, t.name, req.user_agent);
  if (fault && fault->status) {
    Error e = Error::api(fault->status,
                         fault->status == 429   ? "TooManyRequests"
                         : fault->status == 503 ? "ServiceUnavailable"
                         : fault->status == 500 ? "InternalError"
                                                : "",
                         fault->status == 429 ? "Too many requests, please try again later."
                                              : fmt::format("Internal error occurred: injected fault on {} {}", verb, res));
    if (fault->retry_after_seconds >= 0) e.retry_after_seconds = fault->retry_after_seconds;
    resp = error(e, t);
  } else if (verb.empty() || (t.rt->review && (verb != "create" || !t.name.empty()))) {
    resp = error(Error::api(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"), t);
  } else if (t.rt->review) {
    resp = review(req, t);
  } else if (t.subresource == "scale") {
    resp = scale(req, t, verb);
  } else if (verb == "watch") {
    Target wt = t;
    if (!t.name.empty()) wt.name.clear();
    HttpRequest copy = req;
    if (!t.name.empty()) {
      std::string fs = query(req, "fieldSelector");
      copy.query["fieldSelector"] = fs.empty() ? "metadata.name=" + t.name : fs + ",metadata.name=" + t.name;
    }
    resp = watch(copy, wt);
  } else if (verb == "list") {
    resp = list(req, t);
  } else if (verb == "get") {
    resp = get(req, t);
  } else if (verb == "create") {
    if (t.subresource == "eviction") resp = evict(req, t);
    else if (t.subresource == "binding") resp = bind(req, t);
    else if (!t.name.empty())
      resp = error(Error::api(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"), t);
    else resp = create(req, t);
  } else if (verb == "update") {
    resp = t.name.empty() ? error(Error::api(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"), t)
                          : update(req, t);
  } else if (verb == "patch") {
    resp = t.name.empty() ? error(Error::api(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"), t)
                          : patch(req, t);
  } else if (verb == "delete") {
    resp = remove(req, t);
  } else {
    resp = error(Error::api(405, "MethodNotAllowed", "deletecollection is not supported by kubesim"), t);
  }
  if (fault) {
    resp.delay = std::chrono::milliseconds(fault->delay_ms);
    resp.reset = fault->reset;
    resp.watch_drop_after_events = fault->watch_drop_after_events;
    resp.watch_drop_after_ms = fault->watch_drop_after_ms;
  }
  resp.verb = verb;
  resp.resource = res;
  return resp;
}

HttpResponse Api::list(const HttpRequest& req, const Target& t) {
  std::string rv_text = query(req, "resourceVersion");
  std::string rvm = query(req, "resourceVersionMatch");
  std::string cont = query(req, "continue");
  std::string limit_text = query(req, "limit");
  if (!rvm.empty() && rv_text.empty())
    return error(Cluster::bad_request("resourceVersionMatch is forbidden unless resourceVersion is provided"), t);
  if (rvm == "Exact" && rv_text == "0")
    return error(Cluster::bad_request("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""), t);
  if (!cont.empty() && !rv_text.empty() && rv_text != "0")
    return error(Cluster::bad_request("specifying resource version is not allowed when using continue"), t);
  size_t limit = 0;
  if (!limit_text.empty()) {
    auto l = parse_int(limit_text);
    if (!l || *l < 0) return error(Cluster::bad_request(fmt::format("invalid limit \"{}\"", limit_text)), t);
    limit = static_cast<size_t>(*l);
  }
  std::optional<model::LabelSelector> labels;
  if (auto ls = query(req, "labelSelector"); !ls.empty()) {
    auto s = model::LabelSelector::parse(ls);
    if (!s) return error(Cluster::bad_request(s.error().message), t);
    labels = std::move(*s);
  }
  std::optional<model::FieldSelector> fields;
  if (auto fs = query(req, "fieldSelector"); !fs.empty()) {
    auto s = model::FieldSelector::parse(fs);
    if (!s) return error(Cluster::bad_request(s.error().message), t);
    if (auto bad = s->unsupported([&](std::string_view f) { return t.rt->stored().field_selectable(f); }))
      return error(Cluster::bad_request(unsupported_field_message(*t.rt, *bad)), t);
    fields = std::move(*s);
  }
  const Store& store = cluster_.store();
  uint64_t at = store.resource_version();
  std::string after;
  if (!cont.empty()) {
    auto raw = base64_decode(cont);
    Doc d;
    if (!raw || !parse_json(*raw, d) || !json_int(d, {"rv"}))
      return error(Cluster::bad_request("continue key is not valid: illegal base64 data"), t);
    at = static_cast<uint64_t>(*json_int(d, {"rv"}));
    after = std::string(json_string(d, {"start"}));
    auto issued = json_int(d, {"issued"}).value_or(0);
    auto age = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() - issued;
    if (cluster_.faults().take_continue_expiry() || age > options_.continue_ttl.count() || !store.can_resume(at))
      return error(Error::api(410, "Expired",
                              "The provided continue parameter is too old to display a consistent list result. You can "
                              "start a new list without the continue parameter."),
                   t);
  } else if (!rv_text.empty() && rv_text != "0") {
    auto rv = parse_int(rv_text);
    if (!rv || *rv < 0) return error(Cluster::bad_request(fmt::format("invalid resource version \"{}\"", rv_text)), t);
    if (static_cast<uint64_t>(*rv) > store.resource_version()) {
      Error e = Error::api(504, "Timeout", fmt::format("Too large resource version: {}, current: {}", *rv, store.resource_version()));
      e.causes.push_back({"ResourceVersionTooLarge", "", "Too large resource version"});
      e.retry_after_seconds = 1;
      HttpResponse r = error(e, t);
      r.delay = std::chrono::seconds(3);
      return r;
    }
    bool exact = rvm == "Exact" || (rvm.empty() && limit > 0);
    if (exact) {
      at = static_cast<uint64_t>(*rv);
      if (!store.can_resume(at))
        return error(Error::api(410, "Expired", fmt::format("too old resource version: {} ({})", at, store.compacted_rv() + 1)), t);
    }
  }

  std::string prefix = t.ns.empty() || !t.rt->stored().namespaced ? std::string() : t.ns + "/";
  auto match = [&](const StoredObject& o) {
    if (!prefix.empty() && !o.key.starts_with(prefix)) return false;
    if (labels && !labels->empty() && !labels->matches(labels_of(o.doc))) return false;
    if (fields && !fields->empty() && !fields->matches([&](std::string_view f) { return field_value(o.doc, f); })) return false;
    return true;
  };
  bool more = false;
  auto items = store.list_at(*t.rt, at, prefix, after, limit, match, &more);
  if (!items) return error(items.error(), t);
  std::string next = more && !items->empty() ? encode_continue(at, items->back()->key) : std::string();
  // How many items the next pages hold, as the apiserver tells when no selector filters them.
  std::optional<size_t> remaining;
  if (!next.empty() && (!labels || labels->empty()) && (!fields || fields->empty())) {
    bool more_again = false;
    if (auto rest = store.list_at(*t.rt, at, prefix, items->back()->key, 0, match, &more_again)) remaining = rest->size();
  }

  HttpResponse r;
  if (wants_table(req)) {
    std::vector<const Value*> docs;
    for (const auto& o : *items) docs.push_back(&o->doc);
    r.content_type = kTableType;
    r.body = render_table(*t.rt, docs, cluster_.now(), std::to_string(at), next);
    return r;
  }
  std::string body;
  body.reserve(items->size() * 1024 + 256);
  bool partial = wants_partial(req);
  body += fmt::format(R"({{"kind":"{}","apiVersion":"{}","metadata":{{"resourceVersion":"{}")",
                      partial ? "PartialObjectMetadataList" : t.rt->list_kind(), partial ? "meta.k8s.io/v1" : t.rt->group_version(), at);
  if (!next.empty()) body += fmt::format(R"(,"continue":"{}")", next);
  if (remaining) body += fmt::format(R"(,"remainingItemCount":{})", *remaining);
  body += R"(},"items":[)";
  for (size_t i = 0; i < items->size(); ++i) {
    if (i) body += ',';
    if (partial) {
      body += R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)";
      const Value* m = json_member((*items)[i]->doc, "metadata");
      body += m ? to_json(*m) : "{}";
      body += '}';
    } else {
      body += render(*t.rt, *(*items)[i]);
    }
  }
  body += "]}";
  r.body = std::move(body);
  return r;
}

HttpResponse Api::watch(const HttpRequest& req, const Target& t) {
  WatchSpec spec;
  spec.rt = t.rt;
  spec.ns = t.rt->stored().namespaced ? t.ns : "";
  if (auto ls = query(req, "labelSelector"); !ls.empty()) {
    auto s = model::LabelSelector::parse(ls);
    if (!s) return error(Cluster::bad_request(s.error().message), t);
    spec.labels = std::move(*s);
  }
  if (auto fs = query(req, "fieldSelector"); !fs.empty()) {
    auto s = model::FieldSelector::parse(fs);
    if (!s) return error(Cluster::bad_request(s.error().message), t);
    if (auto bad = s->unsupported([&](std::string_view f) { return t.rt->stored().field_selectable(f); }))
      return error(Cluster::bad_request(unsupported_field_message(*t.rt, *bad)), t);
    spec.fields = std::move(*s);
  }
  std::string rv_text = query(req, "resourceVersion");
  spec.bookmarks = flag(req, "allowWatchBookmarks");
  if (flag(req, "sendInitialEvents")) {
    if (query(req, "resourceVersionMatch") != "NotOlderThan") {
      // The apiserver validates a watch's ListOptions as an object of its own.
      Error e = Error::api(422, "Invalid",
                           "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires "
                           "setting resourceVersionMatch to NotOlderThan");
      e.causes.push_back({"FieldValueForbidden", "resourceVersionMatch",
                          "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"});
      static const ResourceType kListOptions = [] {
        ResourceType r;
        r.group = "meta.k8s.io";
        r.kind = "ListOptions";
        return r;
      }();
      HttpResponse r;
      r.status = 422;
      r.body = status_body(e, &kListOptions, "");
      return r;
    }
    spec.initial = true;
    spec.initial_events_end = true;
  } else if (rv_text.empty() || rv_text == "0") {
    spec.initial = true;
  } else {
    auto rv = parse_int(rv_text);
    if (!rv || *rv < 0) return error(Cluster::bad_request(fmt::format("invalid resource version \"{}\"", rv_text)), t);
    spec.from_rv = static_cast<uint64_t>(*rv);
    if (spec.from_rv > cluster_.store().resource_version()) {
      Error e = Error::api(504, "Timeout",
                           fmt::format("Too large resource version: {}, current: {}", spec.from_rv, cluster_.store().resource_version()));
      e.causes.push_back({"ResourceVersionTooLarge", "", "Too large resource version"});
      return error(e, t);
    }
  }
  if (auto ts = query(req, "timeoutSeconds"); !ts.empty()) {
    auto n = parse_int(ts);
    if (!n || *n < 0) return error(Cluster::bad_request(fmt::format("invalid timeoutSeconds \"{}\"", ts)), t);
    spec.timeout = std::chrono::seconds(*n);
  } else {
    static std::mt19937 rng(7);
    spec.timeout = std::chrono::seconds(std::uniform_int_distribution<int>(1800, 3600)(rng));
  }
  spec.table = wants_table(req);
  spec.expire_now = cluster_.faults().take_watch_expiry(t.rt->plural);
  HttpResponse r;
  r.content_type = spec.table ? kTableType : "application/json";
  r.watch = std::make_shared<WatchStream>(cluster_, std::move(spec));
  return r;
}

HttpResponse Api::get(const HttpRequest& req, const Target& t) {
  auto obj = cluster_.get(*t.rt, t.ns, t.name);
  if (!obj) return error(obj.error(), t);
  return object_response(200, t, **obj, req);
}

namespace {
// The type an object of resource rt is stored as: events.k8s.io/v1 Events are core v1 Events,
// the body converted.
const ResourceType* stored_as(const ResourceType* rt, Doc& obj) {
  if (!rt->storage) return rt;
  Doc core;
  new_event_to_core(obj, core, core.GetAllocator());
  obj = std::move(core);
  return rt->storage;
}
}  // namespace

HttpResponse Api::create(const HttpRequest& req, const Target& t) {
  Result<Doc> body = parse_create_body(req, *t.rt);
  if (!body) return error(body.error(), t);
  Doc obj = std::move(*body);
  Target named = t;  // errors name the object in their details
  named.name = std::string(name_of(obj));
  if (t.rt->storage) {
    // Validated as the internal core Event it is stored as: the API server's Status names that kind.
    Target core = named;
    core.rt = t.rt->storage;
    if (auto valid = validate_new_event(*core.rt, t.ns, obj); !valid) return error(valid.error(), core);
  }
  const ResourceType* store_as = stored_as(t.rt, obj);
  std::vector<std::string> warnings;
  auto created = cluster_.create(*store_as, t.ns, std::move(obj), write_options(req, &warnings));
  if (!created) return error(created.error(), named);
  HttpResponse r = object_response(201, t, **created, req);
  add_warnings(r, warnings);
  return r;
}

HttpResponse Api::update(const HttpRequest& req, const Target& t) {
  auto body = parse_body(req);
  if (!body) return error(body.error(), t);
  Doc obj = std::move(*body);
  const ResourceType* store_as = stored_as(t.rt, obj);
  std::vector<std::string> warnings;
  auto updated = cluster_.update(*store_as, t.ns, t.name, std::move(obj), t.subresource == "status", write_options(req, &warnings));
  if (!updated) return error(updated.error(), t);
  HttpResponse r = object_response(200, t, **updated, req);
  add_warnings(r, warnings);
  return r;
}

HttpResponse Api::patch(const HttpRequest& req, const Target& t) {
  auto type = patch_type_from(req.content_type);
  if (!type)
    return error(Error::api(415, "UnsupportedMediaType",
                            fmt::format("the body of the request was in an unknown format - accepted media types "
                                        "include: application/json-patch+json, application/merge-patch+json, "
                                        "application/apply-patch+yaml{}",
                                        t.rt->crd ? "" : ", application/strategic-merge-patch+json")),
                 t);
  Result<Doc> body = *type == PatchType::kApply ? parse_yaml(req.body) : [&]() -> Result<Doc> {
    Doc d;
    if (auto p = parse_json(req.body, d); !p) return Cluster::bad_request(p.error().message);
    return d;
  }();
  if (!body) return error(Cluster::bad_request(body.error().message), t);
  std::vector<std::string> warnings;
  const ResourceType* store_as = t.rt;
  if (t.rt->storage) {
    // A patch through the events.k8s.io view names its fields the view's way.
    if (*type == PatchType::kJson) return error(Cluster::bad_request("JSON patches of events.k8s.io events are not supported"), t);
    Doc core;
    new_event_to_core(*body, core, core.GetAllocator());
    drop_field(core, "apiVersion");
    drop_field(core, "kind");
    body = std::move(core);
    store_as = t.rt->storage;
  }
  auto patched = cluster_.patch(*store_as, t.ns, t.name, *type, *body, t.subresource == "status", write_options(req, &warnings));
  if (!patched) return error(patched.error(), t);
  HttpResponse r = object_response(200, t, **patched, req);
  add_warnings(r, warnings);
  return r;
}

HttpResponse Api::remove(const HttpRequest& req, const Target& t) {
  auto opts = decode_delete_options(req.content_type, req.body, req.query);
  if (!opts) return error(Cluster::bad_request(opts.error().message), t);
  auto removed = cluster_.remove(t.rt->stored(), t.ns, t.name, *opts);
  if (!removed) return error(removed.error(), t);
  const bool gone = !opts->dry_run && !cluster_.store().get(t.rt->stored(), Store::key_of(*t.rt, t.ns, t.name));
  if (gone && !t.rt->returns_deleted_object) {
    // What the apiserver's store answers for a kind that does not return the deleted object.
    Doc d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    set_str(d, "kind", "Status", a);
    set_str(d, "apiVersion", "v1", a);
    d.AddMember("metadata", Value(rapidjson::kObjectType), a);
    set_str(d, "status", "Success", a);
    Value details(rapidjson::kObjectType);
    set_str(details, "name", t.name, a);
    if (!t.rt->group.empty()) set_str(details, "group", t.rt->group, a);
    set_str(details, "kind", t.rt->plural, a);
    set_str(details, "uid", json_string((*removed)->doc, {"metadata", "uid"}), a);
    d.AddMember("details", details, a);
    HttpResponse r;
    r.body = to_json(d);
    return r;
  }
  return object_response(200, t, **removed, req);
}

// GET, PUT and PATCH of an autoscaling/v1 Scale (always JSON: the apiserver has no Table
// columns of its own for Scale either, and kubectl prints what it gets).
HttpResponse Api::scale(const HttpRequest& req, const Target& t, std::string_view verb) {
  auto reply = [&](Result<Doc> scale) {
    if (!scale) return error(scale.error(), t);
    HttpResponse r;
    r.body = to_json(*scale);
    return r;
  };
  if (verb == "get") return reply(cluster_.scale_of(*t.rt, t.ns, t.name));
  std::vector<std::string> warnings;
  if (verb == "update") {
    auto body = parse_body(req);
    if (!body) return error(body.error(), t);
    HttpResponse r = reply(cluster_.update_scale(*t.rt, t.ns, t.name, *body, write_options(req, &warnings)));
    add_warnings(r, warnings);
    return r;
  }
  if (verb == "patch") {
    auto type = patch_type_from(req.content_type);
    if (!type || *type == PatchType::kApply)
      return error(Error::api(415, "UnsupportedMediaType",
                              "the body of the request was in an unknown format - accepted media types include: "
                              "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json"),
                   t);
    Doc patch;
    if (auto p = parse_json(req.body, patch); !p) return error(Cluster::bad_request(p.error().message), t);
    auto current = cluster_.scale_of(*t.rt, t.ns, t.name);
    if (!current) return error(current.error(), t);
    Doc& s = *current;
    // As for the object itself: a JSON patch that fails is 422, a strategic merge patch 400.
    if (*type == PatchType::kJson) {
      if (auto r = json_patch(s, patch, s.GetAllocator()); !r) return error(Error::api(422, "Invalid", r.error().message), t);
    } else if (*type == PatchType::kStrategic) {
      if (auto r = strategic_merge_patch(s, patch, s.GetAllocator()); !r) return error(Cluster::bad_request(r.error().message), t);
    } else {
      merge_patch(s, patch, s.GetAllocator());
    }
    HttpResponse r = reply(cluster_.update_scale(*t.rt, t.ns, t.name, s, write_options(req, &warnings)));
    add_warnings(r, warnings);
    return r;
  }
  return error(Error::api(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"), t);
}

HttpResponse Api::evict(const HttpRequest& req, const Target& t) {
  Doc body;
  if (auto p = parse_json(req.body, body); !p || !body.IsObject())
    return error(Cluster::bad_request("the request body is not a valid Eviction"), t);
  std::string_view body_name = json_string(body, {"metadata", "name"});
  if (!body_name.empty() && body_name != t.name)
    return error(Cluster::bad_request("name in URL does not match name in Eviction object"), t);
  std::string_view api_version = json_string(body, {"apiVersion"});
  if (!api_version.empty() && api_version != "policy/v1" && api_version != "policy/v1beta1")
    return error(Cluster::bad_request(fmt::format("unsupported Eviction apiVersion \"{}\"", api_version)), t);
  DeleteOptions opts;
  if (const Value* d = json_member(body, "deleteOptions")) {
    auto decoded = decode_delete_options("application/json", to_json(*d), {});
    if (!decoded) return error(Cluster::bad_request(decoded.error().message), t);
    opts = *decoded;
  }
  auto r = cluster_.evict(t.ns, t.name, opts);
  if (!r) return error(r.error(), t);
  return created_status();
}

HttpResponse Api::bind(const HttpRequest& req, const Target& t) {
  Doc body;
  if (auto p = parse_json(req.body, body); !p || !body.IsObject())
    return error(Cluster::bad_request("the request body is not a valid Binding"), t);
  std::string_view node = json_string(body, {"target", "name"});
  if (node.empty()) return error(Cluster::bad_request("Binding target.name is required"), t);
  auto r = cluster_.bind(t.ns, t.name, node);
  if (!r) return error(r.error(), t);
  return created_status();
}

namespace {

// The paths the system:discovery ClusterRole opens to every user.
bool discovery_path(std::string_view path) {
  for (std::string_view p : {"/api", "/apis", "/openapi", "/version"})
    if (path == p || path.starts_with(std::string(p) + "/")) return true;
  return path == "/healthz" || path == "/livez" || path == "/readyz";
}

}  // namespace

HttpResponse Api::review(const HttpRequest& req, const Target& t) {
  Doc body;
  if (t.rt->kind == "SelfSubjectReview") {
    body.SetObject();  // nothing in it is read
  } else if (req.content_type.starts_with("application/vnd.kubernetes.protobuf")) {
    auto decoded = decode_review_protobuf(req.body, t.rt->kind);
    if (!decoded) return error(decoded.error(), t);
    body = std::move(*decoded);
  } else if (auto p = parse_json(req.body, body); !p || !body.IsObject()) {
    return error(Cluster::bad_request(fmt::format("the request body is not a valid {}", t.rt->kind)), t);
  }
  Alloc& a = body.GetAllocator();
  set_str(body, "apiVersion", t.rt->group_version(), a);
  set_str(body, "kind", t.rt->kind, a);
  Value& metadata = ensure_object(body, "metadata", a);
  if (!metadata.HasMember("creationTimestamp")) metadata.AddMember("creationTimestamp", Value(rapidjson::kNullType), a);
  Value status(rapidjson::kObjectType);
  // Plain HTTP and in-process requests act as the unrestricted admin.
  const UserInfo admin{"admin", {"system:masters", "system:authenticated"}};
  const UserInfo& self = req.user ? *req.user : admin;

  if (t.rt->kind == "SelfSubjectRulesReview") {
    // system:masters may do anything; any other user what its bindings grant in the namespace,
    // plus what system:basic-user and system:discovery give every user.
    Value resource_rules(rapidjson::kArrayType), non_resource_rules(rapidjson::kArrayType);
    auto rule = [&](std::vector<std::string_view> verbs, std::vector<std::string_view> groups, std::vector<std::string_view> resources,
                    std::vector<std::string_view> urls) {
      Value r(rapidjson::kObjectType);
      auto list = [&](std::string_view key, const std::vector<std::string_view>& items) {
        Value v(rapidjson::kArrayType);
        for (auto i : items) v.PushBack(str(i, a), a);
        set(r, key, std::move(v), a);
      };
      list("verbs", verbs);
      if (urls.empty()) {
        list("apiGroups", groups);
        list("resources", resources);
        resource_rules.PushBack(r, a);
      } else {
        list("nonResourceURLs", urls);
        non_resource_rules.PushBack(r, a);
      }
    };
    if (self.superuser()) {
      rule({"*"}, {"*"}, {"*"}, {});
      rule({"*"}, {}, {}, {"*"});
    } else {
      rule({"create"}, {"authorization.k8s.io"}, {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}, {});
      rule({"create"}, {"authentication.k8s.io"}, {"selfsubjectreviews"}, {});
      for (const Value* granted : rbac_rules(cluster_.store(), cluster_.registry(), self, json_string(body, {"spec", "namespace"}))) {
        Value copy = copy_of(*granted, a);
        if (copy.IsObject() && copy.HasMember("nonResourceURLs")) continue;  // not read by kubesim's RBAC
        resource_rules.PushBack(copy, a);
      }
      rule({"get"}, {}, {},
           {"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"});
    }
    status.AddMember("resourceRules", resource_rules, a);
    status.AddMember("nonResourceRules", non_resource_rules, a);
    set_bool(status, "incomplete", false, a);
  } else if (t.rt->kind == "SelfSubjectReview") {
    Value info(rapidjson::kObjectType);
    set_str(info, "username", self.name, a);
    Value groups(rapidjson::kArrayType);
    for (const auto& g : self.groups) groups.PushBack(str(g, a), a);
    info.AddMember("groups", groups, a);
    status.AddMember("userInfo", info, a);
  } else {
    UserInfo subject = self;
    if (t.rt->kind == "SubjectAccessReview") {
      subject = UserInfo{std::string(json_string(body, {"spec", "user"})), {}};
      if (const Value* g = json_path(body, {"spec", "groups"}); g && g->IsArray())
        for (const auto& v : g->GetArray())
          if (v.IsString()) subject.groups.emplace_back(v.GetString(), v.GetStringLength());
      if (subject.name.empty() && subject.groups.empty())
        return error(Cluster::invalid(*t.rt, "",
                                      {{"FieldValueInvalid", "spec.user",
                                        "spec.user: Invalid value: \"\": at least one of user or group must be specified"}}),
                     t);
    }
    const Value* resource = json_path(body, {"spec", "resourceAttributes"});
    const Value* non_resource = json_path(body, {"spec", "nonResourceAttributes"});
    if ((resource && resource->IsObject()) == (non_resource && non_resource->IsObject()))
      return error(Cluster::invalid(*t.rt, "",
                                    {{"FieldValueInvalid", "spec.resourceAttributes",
                                      "spec.resourceAttributes: Invalid value: \"null\": exactly one of "
                                      "nonResourceAttributes or resourceAttributes must be specified"}}),
                   t);
    bool allowed = true;
    std::string reason;
    if (!subject.superuser()) {
      if (resource && resource->IsObject()) {
        RequestAttributes attrs{std::string(json_string(*resource, {"verb"})),      std::string(json_string(*resource, {"group"})),
                                std::string(json_string(*resource, {"resource"})),  std::string(json_string(*resource, {"subresource"})),
                                std::string(json_string(*resource, {"namespace"})), std::string(json_string(*resource, {"name"}))};
        allowed = rbac_allows(cluster_.store(), cluster_.registry(), subject, attrs);
      } else {
        allowed = json_string(*non_resource, {"verb"}) == "get" && discovery_path(json_string(*non_resource, {"path"}));
      }
      reason = allowed ? "allowed by the cluster's RBAC objects" : "";
    } else {
      reason = "kubesim restricts service accounts only";
    }
    set_bool(status, "allowed", allowed, a);
    if (!reason.empty()) set_str(status, "reason", reason, a);
  }
  drop_field(body, "status");
  body.AddMember("status", status, a);
  HttpResponse resp;
  resp.status = 201;
  resp.body = to_json(body);
  return resp;
}

}  // namespace spotshift::kubesim
