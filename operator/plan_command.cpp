#include "plan_command.hpp"

#include "core/flags.hpp"
#include "core/strings.hpp"
#include "drain/gate.hpp"
#include "drain/plan_format.hpp"
#include "model/node.hpp"
#include "model/pdb.hpp"
#include "model/pod.hpp"
#include "model/volume.hpp"
#include "model/workload.hpp"
#include "model/yaml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <iterator>
#include <map>
#include <system_error>
#include <thread>

#include <ostream>

namespace spotshift::op {

// How the items of a snapshot's top-level List are shared among readers (read_snapshot): the
// caller's settings, with `readers` resolved to a number.
struct SharedReading {
  std::string_view text;  // the whole snapshot
  SnapshotReading how;
};

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
  // by item, anything else by its kind. Each object is decoded from the text as it comes. With
  // `shared`, a long list's items are shared among readers (the top-level List of a snapshot).
  Result<void> object(model::JsonReader& r, const SharedReading* shared = nullptr) {
    const std::string kind = kind_ahead(r.rest());
    if (!kind.empty() && !kind.ends_with("List")) return decode(kind, r);
    std::string_view key;
    r.begin_object();
    while (r.next_member(key)) {
      if (key == "items" && r.peek() == model::JsonType::kArray) {
        r.begin_array();
        if (auto done = shared ? shared_items(r, *shared) : items(r); !done) return done;
      } else {
        r.skip();
      }
    }
    if (!r.ok()) return Error::decode(r.error());
    return Result<void>{};
  }

  // The elements of the array r is in, to its end, or until one starts at `stop` (then it sets
  // `*stopped`, which must be given with `stop`, and leaves that element unread), or until
  // `cancel` is set.
  Result<void> items(model::JsonReader& r, const char* stop = nullptr, bool* stopped = nullptr, const std::atomic<bool>* cancel = nullptr) {
    while (r.next_element()) {
      if (stop && r.rest().data() == stop) {
        *stopped = true;
        return Result<void>{};
      }
      if (cancel && cancel->load(std::memory_order_relaxed)) return Result<void>{};
      if (r.peek() != model::JsonType::kObject) r.skip();
      else if (auto done = object(r); !done) return done;
    }
    if (!r.ok()) return Error::decode(r.error());
    return Result<void>{};
  }

  Result<void> shared_items(model::JsonReader& r, const SharedReading& shared);

  // What another collector read from the objects after this one's, as if this one had read on.
  void absorb(Collector&& o) {
    auto append = [](auto& into, auto& from) { std::move(from.begin(), from.end(), std::back_inserter(into)); };
    append(snap.input.nodes, o.snap.input.nodes);
    append(snap.input.pods, o.snap.input.pods);
    append(snap.input.pdbs, o.snap.input.pdbs);
    append(snap.warnings, o.snap.warnings);
    append(claims, o.claims);
    append(volumes, o.volumes);
    for (auto& [name, labels] : o.snap.input.namespaces) snap.input.namespaces[name] = std::move(labels);
    for (auto& [key, data] : o.snap.config_maps) snap.config_maps[key] = std::move(data);
    for (auto& [kind, by_key] : o.controllers)
      for (auto& [key, controller] : by_key) controllers[kind][key] = std::move(controller);
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
    } else if (kind == "ConfigMap") {
      model::JsonDecoder d("configmap");
      model::ObjectMeta meta;
      std::map<std::string, std::string> data;
      auto done = model::decode_object(d, r, meta, [&](std::string_view key) {
        if (key != "data" || r.peek() != model::JsonType::kObject) return false;
        std::string_view k, v;
        r.begin_object();
        while (r.next_member(k)) {
          std::string name(k);
          if (r.peek() == model::JsonType::kString && r.read_string(v)) data.emplace(std::move(name), std::string(v));
          else r.skip();
        }
        return true;
      });
      if (done) snap.config_maps[meta.key()] = std::move(data);
    } else {
      r.skip();
    }
    if (!r.ok()) return Error::decode(r.error());
    return Result<void>{};
  }
};

namespace {

// Where the readers of a long List start, after the first. kubectl writes each item of a List on
// lines of its own, indented as the first, so an item starts where a line break is followed by
// that indentation and '{' (a line break inside a string is written as \n). One point per
// reader after the first, near equal shares of the text; none when the items are not written
// so. A point is a guess until the reader before it reaches an item starting there.
std::vector<size_t> split_points(std::string_view text, size_t first, size_t readers) {
  const size_t line = text.rfind('\n', first);
  if (line == std::string_view::npos || readers < 2) return {};
  const std::string_view indent = text.substr(line + 1, first - line - 1);
  if (indent.find_first_not_of(" \t") != std::string_view::npos) return {};
  const std::string start = fmt::format("\n{}{{", indent);
  std::vector<size_t> points;
  for (size_t k = 1; k < readers; ++k) {
    const size_t from = std::max(text.size() / readers * k, points.empty() ? first + 1 : points.back() + 1);
    const size_t at = text.find(start, from);
    if (at == std::string_view::npos) break;
    points.push_back(at + start.size() - 1);
  }
  return points;
}

// What a reader after the first read: its objects, and where it stopped.
struct Share {
  Collector c;
  model::JsonReader r;
  Result<void> done;
  bool stopped = false;  // at an element starting where the next reader started
};

}  // namespace

// The items of a long List read by several readers at once, the first on this thread: each
// reader after the first starts at a point found by split_points() and reads until an element
// starts at the next one's point or the array ends. Once the first reaches an element at the
// second's point, the second's start is proven an element of this array, and so on down the
// line; the objects are then kept in the order of the text, as one reader keeps them. If the
// first reads past that point (a guess that was no element of this array), it reads on alone
// and what the others read is dropped.
Result<void> Collector::shared_items(model::JsonReader& r, const SharedReading& shared) {
  const std::string_view text = shared.text;
  const size_t first = static_cast<size_t>(r.rest().data() - text.data());
  const size_t readers =
      std::min(shared.how.readers, std::max<size_t>(1, text.size() / std::max<size_t>(1, shared.how.min_bytes_per_reader)));
  const std::vector<size_t> points = split_points(text, first, readers);
  if (points.empty()) return items(r);
  std::atomic<bool> cancel{false};
  std::vector<std::future<Share>> ahead;
  auto stop_all = [&] {
    cancel = true;
    for (auto& f : ahead)
      if (f.valid()) f.wait();
  };
  try {
    for (size_t k = 0; k < points.size(); ++k)
      ahead.push_back(std::async(std::launch::async, [&, k] {
        Share s{Collector{}, model::JsonReader::in_array(text, points[k]), Result<void>{}};
        s.done = s.c.items(s.r, k + 1 < points.size() ? text.data() + points[k + 1] : nullptr, &s.stopped, &cancel);
        return s;
      }));
  } catch (const std::system_error&) {
    // No thread to be had (a limit on processes, say): one reader reads it all.
    stop_all();
    return items(r);
  }
  bool stopped = false;
  auto done = items(r, text.data() + points[0], &stopped);
  if (!done || !stopped) {
    stop_all();
    return done;
  }
  for (auto& f : ahead) {
    Share s = f.get();
    absorb(std::move(s.c));
    if (shared.how.used) ++*shared.how.used;
    if (!s.done || !s.stopped) {
      stop_all();
      if (!s.done) return s.done;
      if (!r.leave_array(s.r)) return Error::decode(r.error());
      return Result<void>{};
    }
  }
  return Error::internal("the last reader of a snapshot's items stopped before their end");
}

namespace {

std::string one_of(const std::string& v, std::initializer_list<std::string_view> allowed) {
  for (auto a : allowed)
    if (v == a) return "";
  std::vector<std::string> names(allowed.begin(), allowed.end());
  return fmt::format("must be one of {}", join(names, ", "));
}

}  // namespace

SnapshotBuilder::SnapshotBuilder() : c_(std::make_unique<Collector>()) {}
SnapshotBuilder::SnapshotBuilder(SnapshotBuilder&&) noexcept = default;
SnapshotBuilder::~SnapshotBuilder() = default;

Result<void> SnapshotBuilder::add(std::string_view kind, model::JsonReader& r) { return c_->decode(kind, r); }

void SnapshotBuilder::listed_all(std::string_view kind) { c_->controllers[std::string(kind)]; }

void SnapshotBuilder::warn(std::string warning) { c_->snap.warnings.push_back(std::move(warning)); }

Result<Snapshot> read_snapshot(std::string_view text, const SnapshotReading& how) {
  // kubectl's -o json is read straight from its text, object by object: the YAML reader (JSON is
  // YAML too) builds a document and is far slower on a 150,000-pod dump. A document starting with
  // '{' must therefore be JSON.
  SnapshotBuilder b;
  Collector& c = *b.c_;
  if (std::string_view t = trim(text); t.starts_with('{')) {
    model::JsonReader r(t);
    const size_t cores = std::max<unsigned>(1, std::thread::hardware_concurrency());
    SharedReading shared{t, how};
    if (shared.how.readers == 0) shared.how.readers = std::min<size_t>(cores, 8);
    if (how.used) *how.used = 1;
    if (auto done = c.object(r, &shared); !done) return done.error();
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
  auto snap = std::move(b).finish();
  if (!snap)
    return Error::invalid(fmt::format("the snapshot holds {} (make it with kubectl get nodes,pods,pdb -A -o json)", snap.error().message));
  return snap;
}

Result<Snapshot> SnapshotBuilder::finish() && {
  Collector& c = *c_;
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
  if (c.snap.input.nodes.empty()) return Error::invalid("no Node objects");
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

namespace {

// The policy a live plan uses: the one named, the only one, or the defaults when there is none.
Result<std::pair<std::string, drain::PolicySpec>> cluster_policy(const std::vector<drain::ReschedulePolicy>& policies,
                                                                 const std::string& name, std::vector<std::string>& warnings) {
  std::vector<std::string> names;
  for (const auto& p : policies) names.push_back(p.name());
  const drain::ReschedulePolicy* chosen = nullptr;
  for (const auto& p : policies)
    if (p.name() == name) chosen = &p;
  if (!name.empty() && !chosen)
    return Error::invalid(fmt::format("the cluster has no ReschedulePolicy named {} ({})", name,
                                      names.empty() ? "it has none" : "it has " + join(names, ", ")));
  if (name.empty() && policies.size() > 1)
    return Error::invalid(
        fmt::format("the cluster has {} ReschedulePolicies ({}): choose one with --policy-name", policies.size(), join(names, ", ")));
  if (name.empty() && policies.size() == 1) chosen = &policies[0];
  if (!chosen) {
    warnings.push_back("the cluster has no ReschedulePolicy: planned with the policy's defaults");
    return std::make_pair(std::string("(defaults)"), drain::default_policy_spec());
  }
  if (!chosen->spec) return Error::invalid(fmt::format("the policy {} is invalid: {}", chosen->name(), chosen->spec_error->message));
  return std::make_pair(chosen->name(), *chosen->spec);
}

Result<std::pair<std::string, drain::PolicySpec>> file_policy(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  auto p = read_policy(*text);
  if (!p) return p.error().wrap(fmt::format("reading the policy {}", path));
  return p;
}

}  // namespace

int plan_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const ClusterReader& live) {
  std::string snapshot_path, policy_path, policy_name, output = "table";
  LiveOptions live_options;
  bool exit_code = false;
  FlagSet flags("spotshift plan",
                "Runs the planner and prints which on-demand nodes would be drained, in what order, where the plan found\n"
                "room for each pod, and why every other on-demand node is not drainable. Nothing is written.\n\n"
                "On a live cluster (the current kubeconfig context, or --kubeconfig and --context), with a policy as it\n"
                "is in the cluster:\n"
                "  spotshift plan --policy-name default        (also: kubectl spotshift plan --policy-name default)\n"
                "Offline, on a snapshot:\n"
                "  kubectl get nodes,pods,pdb,namespaces,pvc,pv,rs,sts,jobs -A -o json > snapshot.json\n"
                "  spotshift plan --snapshot snapshot.json --policy policy.yaml\n\n"
                "Exit codes: 0 planned, 1 error, 2 bad flags; with --exit-code, 3 when no node is drainable.");
  flags.add_string("snapshot", &snapshot_path,
                   "A cluster snapshot, a v1 List in JSON or YAML: plan offline instead of reading the cluster.");
  flags.add_string("policy", &policy_path, "A ReschedulePolicy file to plan with.");
  flags.add_string("policy-name", &policy_name,
                   "The ReschedulePolicy in the cluster to plan with (default: the only one; the policy's defaults when there is none).");
  flags.add_string("kubeconfig", &live_options.kubeconfig, "Path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster).");
  flags.add_string("context", &live_options.context, "The kubeconfig context to use (default: its current context).");
  flags.add_bool("exit-code", &exit_code, "Exit with 3 when no on-demand node is drainable (0 when one is), for scripts.");
  flags.add_checked(
      "output", &output, "Output format: table, json or yaml.",
      [](const std::string& v) {
        return one_of(v, {"table", "json", "yaml"});
      },
      "o");
  if (auto stop = flags.parse_command(args, out, err)) return *stop;
  const bool offline = !snapshot_path.empty();
  if (offline && (!policy_name.empty() || !live_options.kubeconfig.empty() || !live_options.context.empty())) {
    err << "error: --snapshot plans offline: --policy-name, --kubeconfig and --context read a live cluster (use --policy FILE "
           "with --snapshot)\n";
    return 2;
  }
  if (!policy_path.empty() && !policy_name.empty()) {
    err << "error: --policy and --policy-name both name the policy: give one\n";
    return 2;
  }
  Snapshot snap;
  std::vector<drain::ReschedulePolicy> cluster_policies;
  if (offline) {
    auto text = read_file(snapshot_path);
    if (!text) {
      err << "error: " << text.error().message << "\n";
      return 1;
    }
    auto read = read_snapshot(*text);
    if (!read) {
      err << "error: reading the snapshot " << snapshot_path << ": " << read.error().message << "\n";
      return 1;
    }
    snap = std::move(*read);
  } else {
    if (!live) {
      err << "error: --snapshot is required here (see spotshift plan --help)\n";
      return 2;
    }
    auto read = live(live_options);
    if (!read) {
      err << "error: reading the cluster: " << read.error().message << "\n";
      return 1;
    }
    snap = std::move(read->snapshot);
    cluster_policies = std::move(read->policies);
  }
  std::pair<std::string, drain::PolicySpec> policy{"(defaults)", drain::default_policy_spec()};
  if (!policy_path.empty() || !offline) {
    auto chosen = !policy_path.empty() ? file_policy(policy_path) : cluster_policy(cluster_policies, policy_name, snap.warnings);
    if (!chosen) {
      err << "error: " << chosen.error().message << "\n";
      return 1;
    }
    policy = std::move(*chosen);
  }
  if (auto& pricing = policy.second.pricing; pricing && pricing->from_config_map()) {
    // The prices of spec.pricing.configMap, from the snapshot (or the cluster) as the operator
    // reads them.
    const std::string key = fmt::format("{}/{}", pricing->config_map_namespace, pricing->config_map_name);
    auto it = snap.config_maps.find(key);
    std::vector<std::string> bad;
    pricing->table = std::make_shared<const drain::PriceTable>(
        drain::price_table(it == snap.config_maps.end() ? std::map<std::string, std::string>{} : it->second, &bad));
    if (it == snap.config_maps.end())
      snap.warnings.push_back(fmt::format("no ConfigMap {} (spec.pricing.configMap){}: no node has a price", key,
                                          offline ? " in the snapshot (add configmaps to the kubectl get)" : ""));
    else if (!bad.empty()) snap.warnings.push_back(drain::bad_prices_text(key, bad));
  }
  for (const auto& w : snap.warnings) err << "warning: " << w << "\n";
  drain::Plan plan = drain::make_plan(snap.input, policy.second);
  if (output == "json") {
    out << drain::plan_to_json(plan);
  } else if (output == "yaml") {
    model::JsonDocument doc;
    if (auto parsed = model::parse_json(drain::plan_to_json(plan), doc); !parsed) {
      err << "error: " << parsed.error().message << "\n";
      return 1;
    }
    out << model::to_yaml(doc);
  } else {
    out << "Policy " << policy.first << ": " << drain::plan_to_table(plan);
    // The one gate a plan made offline can tell: whether a drain could start at this hour.
    if (!policy.second.disruption_windows.empty()) {
      auto window = drain::disruption_window_gate(policy.second.disruption_windows, std::chrono::system_clock::now());
      out << (window.open ? std::string("A disruption window is open now.\n") : fmt::format("Drains wait: {}.\n", window.reason));
    }
  }
  return exit_code && plan.summary.drainable_nodes == 0 ? kNothingDrainable : 0;
}

}  // namespace spotshift::op
