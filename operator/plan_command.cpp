#include "plan_command.hpp"

#include "core/flags.hpp"
#include "core/strings.hpp"
#include "drain/plan_format.hpp"
#include "model/node.hpp"
#include "model/pdb.hpp"
#include "model/pod.hpp"
#include "model/volume.hpp"
#include "model/workload.hpp"
#include "model/yaml.hpp"

#include <fmt/format.h>

#include <map>

#include <ostream>

namespace spotshift::op {

namespace {

// The objects of a snapshot, each decoded from the text in one pass as it comes (no document).
struct Collector {
  Snapshot snap;
  std::vector<model::PersistentVolumeClaim> claims;
  std::vector<model::PersistentVolume> volumes;
  // ReplicaSets, StatefulSets and Jobs by kind, then "namespace/name".
  std::map<std::string, std::map<std::string, std::shared_ptr<const model::WorkloadController>>, std::less<>> controllers;

  template <class T>
  std::optional<T> decoded(Result<T> r) {
    if (r) return std::move(*r);
    snap.warnings.push_back(fmt::format("skipped: {}", r.error().message));
    return std::nullopt;
  }
  template <class T>
  void keep(Result<T> r, std::vector<std::shared_ptr<const T>>& into) {
    if (auto o = decoded(std::move(r))) into.push_back(std::make_shared<const T>(std::move(*o)));
  }

  // The object r is at: a list (an object with an items array, as a v1 List or a PodList) item
  // by item, anything else by its kind. Each object is decoded from the text as it comes.
  Result<void> object(model::JsonReader& r) {
    const std::string kind = kind_ahead(r.rest());
    if (!kind.empty() && !kind.ends_with("List")) return decode(kind, r);
    std::string_view key;
    r.begin_object();
    while (r.next_member(key)) {
      if (key == "items" && r.peek() == model::JsonType::kArray) {
        r.begin_array();
        while (r.next_element()) {
          if (r.peek() != model::JsonType::kObject) r.skip();
          else if (auto done = object(r); !done) return done;
        }
      } else {
        r.skip();
      }
    }
    if (!r.ok()) return Error::decode(r.error());
    return Result<void>{};
  }

  // The kind of the object at the start of text, read no further than its kind member (the
  // second in kubectl's output); empty for a list, whose items come first, or an object with
  // no kind.
  static std::string kind_ahead(std::string_view text) {
    model::JsonReader probe(text);
    std::string_view key, kind;
    if (!probe.begin_object()) return {};
    while (probe.next_member(key)) {
      if (key == "items") return {};
      if (key == "kind" && probe.peek() == model::JsonType::kString && probe.read_string(kind)) return std::string(kind);
      probe.skip();
    }
    return {};
  }

  // Decodes the object r is at as a kind, reading it whole (a kind spotshift plan does not read
  // is skipped).
  Result<void> decode(std::string_view kind, model::JsonReader& r) {
    if (kind == "Node") keep(model::decode_node(r), snap.input.nodes);
    else if (kind == "Pod") {
      auto pod = std::make_shared<model::Pod>();  // decoded in place, where it is kept
      if (auto done = model::decode_pod(r, *pod)) snap.input.pods.push_back(std::move(pod));
      else snap.warnings.push_back(fmt::format("skipped: {}", done.error().message));
    } else if (kind == "PodDisruptionBudget") keep(model::decode_pdb(r), snap.input.pdbs);
    else if (kind == "Namespace") {
      model::JsonDecoder d("namespace");
      model::ObjectMeta meta;
      if (model::decode_object(d, r, meta, [](std::string_view) { return false; })) snap.input.namespaces[meta.name] = meta.labels;
    } else if (model::watched_controller_kind(kind)) {
      if (auto w = decoded(model::decode_workload_controller(r, kind))) {
        std::string key = w->meta.key();  // before *w is moved: the right side of = is evaluated first
        controllers[std::string(kind)][key] = std::make_shared<const model::WorkloadController>(std::move(*w));
      }
    } else if (kind == "PersistentVolumeClaim") {
      if (auto c = decoded(model::decode_pvc(r))) claims.push_back(std::move(*c));
    } else if (kind == "PersistentVolume") {
      if (auto pv = decoded(model::decode_pv(r))) volumes.push_back(std::move(*pv));
    } else {
      r.skip();
    }
    if (!r.ok()) return Error::decode(r.error());
    return Result<void>{};
  }
};

std::string one_of(const std::string& v, std::initializer_list<std::string_view> allowed) {
  for (auto a : allowed)
    if (v == a) return "";
  std::vector<std::string> names(allowed.begin(), allowed.end());
  return fmt::format("must be one of {}", join(names, ", "));
}

}  // namespace

Result<Snapshot> read_snapshot(std::string_view text) {
  // kubectl's -o json is read straight from its text, object by object: the YAML reader (JSON is
  // YAML too) builds a document and is far slower on a 150,000-pod dump. A document starting with
  // '{' must therefore be JSON.
  Collector c;
  if (std::string_view t = trim(text); t.starts_with('{')) {
    model::JsonReader r(t);
    if (auto done = c.object(r); !done) return done.error();
    if (!r.finish()) return Error::decode(r.error());
  } else {
    auto docs = model::parse_yaml_documents(text);
    if (!docs) return docs.error();
    for (const auto& d : *docs) {
      if (!d.IsObject()) return Error::invalid("the snapshot must hold Kubernetes objects or a List of them");
      std::string json = model::json_text(d);
      model::JsonReader r(json);
      if (auto done = c.object(r); !done) return done.error();
    }
  }
  std::vector<const model::PersistentVolumeClaim*> claims;
  std::vector<const model::PersistentVolume*> volumes;
  for (const auto& x : c.claims) claims.push_back(&x);
  for (const auto& x : c.volumes) volumes.push_back(&x);
  c.snap.input.volumes = model::volume_node_requirements(claims, volumes);
  // A snapshot made with pvc,pv holds every claim: a pod whose claim is missing from it cannot be
  // planned, as in the operator. Without them VolumeZone has nothing to check.
  c.snap.input.volumes_watched = !claims.empty() || !volumes.empty();
  // A snapshot made with rs,sts,jobs: a pod whose controller of those kinds is missing from it
  // is not moved, as in the operator. Kinds the snapshot has none of are not checked (and Job
  // pods then block: whether their eviction counts against a backoffLimit is not known).
  if (!c.controllers.empty())
    c.snap.input.owners = [controllers = std::make_shared<decltype(c.controllers)>(std::move(c.controllers))](const model::Pod& pod) {
      return drain::owner_info(
          pod,
          [&](std::string_view kind, const std::string& key) -> std::shared_ptr<const model::WorkloadController> {
            auto k = controllers->find(kind);
            if (k == controllers->end()) return nullptr;
            auto it = k->second.find(key);
            return it == k->second.end() ? nullptr : it->second;
          },
          [&](std::string_view kind) { return controllers->find(kind) != controllers->end(); });
    };
  if (c.snap.input.nodes.empty())
    return Error::invalid("the snapshot holds no Node objects (make it with kubectl get nodes,pods,pdb -A -o json)");
  return std::move(c.snap);
}

Result<std::pair<std::string, drain::PolicySpec>> read_policy(std::string_view text) {
  auto docs = model::parse_yaml_documents(text);
  if (!docs) return docs.error();
  const model::JsonValue* found = nullptr;
  std::function<void(const model::JsonValue&)> visit = [&](const model::JsonValue& v) {
    std::string_view kind = model::json_string(v, {"kind"});
    if (kind == "ReschedulePolicy" && !found) found = &v;
    if (const model::JsonValue* items = model::json_member(v, "items"); kind == "List" && items && items->IsArray())
      for (const auto& i : items->GetArray()) visit(i);
  };
  for (const auto& d : *docs) visit(d);
  if (!found) return Error::invalid("the policy file holds no ReschedulePolicy (kind: ReschedulePolicy)");
  // The policy file is YAML: its document is written back as JSON text for the decoder.
  auto policy = drain::decode_policy(model::json_text(*found));
  if (!policy) return policy.error();
  if (!policy->spec) return *policy->spec_error;
  return std::make_pair(policy->meta.name, std::move(*policy->spec));
}

int plan_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string snapshot_path, policy_path, output = "table";
  FlagSet flags("spotshift plan",
                "Runs the planner offline on a cluster snapshot and prints which on-demand nodes would be drained, in\n"
                "what order, where each pod would go, and why every other on-demand node is not drainable.\n\n"
                "Make a snapshot with:\n  kubectl get nodes,pods,pdb,namespaces,pvc,pv,rs,sts,jobs -A -o json > snapshot.json");
  flags.add_string("snapshot", &snapshot_path, "The cluster snapshot: a v1 List in JSON or YAML (required).");
  flags.add_string("policy", &policy_path, "A ReschedulePolicy file; without it the policy's defaults apply.");
  flags.add_checked(
      "output", &output, "Output format: table or json.",
      [](const std::string& v) {
        return one_of(v, {"table", "json"});
      },
      "o");
  if (auto stop = flags.parse_command(args, out, err)) return *stop;
  if (snapshot_path.empty()) {
    err << "error: --snapshot is required (see spotshift plan --help)\n";
    return 2;
  }
  auto text = read_file(snapshot_path);
  if (!text) {
    err << "error: " << text.error().message << "\n";
    return 1;
  }
  auto snap = read_snapshot(*text);
  if (!snap) {
    err << "error: reading the snapshot " << snapshot_path << ": " << snap.error().message << "\n";
    return 1;
  }
  std::string policy_name = "(defaults)";
  drain::PolicySpec spec = drain::default_policy_spec();
  if (!policy_path.empty()) {
    auto ptext = read_file(policy_path);
    if (!ptext) {
      err << "error: " << ptext.error().message << "\n";
      return 1;
    }
    auto p = read_policy(*ptext);
    if (!p) {
      err << "error: reading the policy " << policy_path << ": " << p.error().message << "\n";
      return 1;
    }
    policy_name = p->first;
    spec = std::move(p->second);
  }
  for (const auto& w : snap->warnings) err << "warning: " << w << "\n";
  drain::Plan plan = drain::make_plan(snap->input, spec);
  if (output == "json") {
    out << drain::plan_to_json(plan);
  } else {
    out << "Policy " << policy_name << ": " << drain::plan_to_table(plan);
  }
  return 0;
}

}  // namespace spotshift::op
