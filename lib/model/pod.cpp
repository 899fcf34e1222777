#include "model/pod.hpp"

#include "model/gather.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace spotshift::model {

std::string_view to_string(PodPhase p) {
  switch (p) {
    case PodPhase::kPending:
      return "Pending";
    case PodPhase::kRunning:
      return "Running";
    case PodPhase::kSucceeded:
      return "Succeeded";
    case PodPhase::kFailed:
      return "Failed";
    case PodPhase::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

namespace {

bool equal_affinity(const std::shared_ptr<const Affinity>& a, const std::shared_ptr<const Affinity>& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return *a == *b;
}

bool equal_except_rv(const Pod& a, const Pod& b) {
  ObjectMeta ma = a.meta;
  ma.resource_version = b.meta.resource_version;
  return ma == b.meta && a.node_name == b.node_name && a.nominated_node == b.nominated_node && a.scheduler_name == b.scheduler_name &&
         a.phase == b.phase && a.controller == b.controller && a.priority == b.priority &&
         a.termination_grace_period_seconds == b.termination_grace_period_seconds &&
         a.deletion_grace_period_seconds == b.deletion_grace_period_seconds && a.requests == b.requests &&
         a.node_selector == b.node_selector && equal_affinity(a.affinity, b.affinity) && a.tolerations == b.tolerations &&
         a.topology_spread == b.topology_spread && a.host_ports == b.host_ports && a.pvc_claims == b.pvc_claims && a.mirror == b.mirror &&
         a.has_empty_dir == b.has_empty_dir && a.has_host_path == b.has_host_path && a.best_effort == b.best_effort && a.ready == b.ready &&
         a.scheduled == b.scheduled && a.unschedulable == b.unschedulable && a.safe_to_evict == b.safe_to_evict &&
         a.do_not_disrupt == b.do_not_disrupt && a.do_not_move == b.do_not_move;
}

// A container as far as the pod's request and host ports go.
struct Container {
  ResourceList requests;
  std::vector<HostPort> host_ports;
  bool restart_always = false;  // an init container that is a sidecar
};

// A resource with a limit but no request is requested at its limit, as the apiserver defaults it.
void decode_container_resources(JsonDecoder& d, JsonReader& r, Container& c, bool& any_cpu_or_memory) {
  Gather<std::string_view, 8> requested;
  Gather<std::pair<std::string_view, Quantity>, 8> limits;
  auto each_quantity = [&](auto&& take) {
    d.members(r, [&](std::string_view name) {
      if (name == kResourceCpu || name == kResourceMemory) any_cpu_or_memory = true;
      take(name, d.quantity(r));
      return true;
    });
  };
  d.members(r, [&](std::string_view key) {
    if (key == "requests") {
      each_quantity([&](std::string_view name, std::optional<Quantity> q) {
        requested.push_back(name);
        if (q) c.requests.set(name, *q);
      });
    } else if (key == "limits") {
      each_quantity([&](std::string_view name, std::optional<Quantity> q) {
        if (q) limits.push_back({name, *q});
      });
    } else {
      return false;
    }
    return true;
  });
  for (const auto& [name, q] : limits.items())
    if (std::ranges::find(requested.items(), name) == requested.items().end()) c.requests.set(name, q);
}

void decode_host_ports(JsonDecoder& d, JsonReader& r, std::vector<HostPort>& out) {
  d.elements(r, [&] {
    HostPort hp;
    int64_t host_port = 0;
    d.members(r, [&](std::string_view key) {
      if (key == "hostPort") host_port = d.integer(r);
      else if (key == "protocol") {
        auto proto = d.string(r);
        hp.protocol = proto == "UDP" ? Protocol::kUDP : proto == "SCTP" ? Protocol::kSCTP : Protocol::kTCP;
      } else if (key == "hostIP") {
        auto ip = d.string(r);
        hp.host_ip = InternedString(ip == "0.0.0.0" ? std::string_view{} : ip);
      } else {
        return false;
      }
      return true;
    });
    if (host_port <= 0) return;
    hp.port = static_cast<int32_t>(host_port);
    out.push_back(hp);
  });
}

Container decode_container(JsonDecoder& d, JsonReader& r, bool& any_cpu_or_memory) {
  Container c;
  d.members(r, [&](std::string_view key) {
    if (key == "resources") decode_container_resources(d, r, c, any_cpu_or_memory);
    else if (key == "ports") decode_host_ports(d, r, c.host_ports);
    else if (key == "restartPolicy") c.restart_always = d.string(r) == "Always";
    else return false;
    return true;
  });
  return c;
}

// matchLabelKeys (In) or mismatchLabelKeys (NotIn): requirements on the pod's own labels.
void decode_label_keys(JsonDecoder& d, JsonReader& r, const Labels& pod_labels, SelectorOp op, std::vector<Requirement>& out) {
  d.elements(r, [&] {
    auto label = d.string(r);
    if (auto v = pod_labels.get(label))
      if (auto req = Requirement::make(label, op, {v->str()})) out.push_back(std::move(*req));
  });
}

// Narrows a selector by the requirements matchLabelKeys / mismatchLabelKeys gave.
void merge_label_keys(LabelSelector& selector, bool has_selector, std::vector<Requirement>& extra) {
  if (extra.empty() || !has_selector) return;
  auto reqs = selector.requirements();
  reqs.insert(reqs.end(), extra.begin(), extra.end());
  selector = LabelSelector(std::move(reqs));
}

PodAffinityTerm decode_affinity_term(JsonDecoder& d, JsonReader& r, const Labels& pod_labels) {
  PodAffinityTerm term;
  std::vector<Requirement> match, mismatch;
  d.members(r, [&](std::string_view key) {
    if (key == "labelSelector") {
      if (auto sel = d.label_selector(r)) {
        term.selector = std::move(*sel);
        term.has_selector = true;
      }
    } else if (key == "namespaces") {
      d.elements(r, [&] { term.namespaces.emplace_back(d.string(r)); });
    } else if (key == "namespaceSelector") {
      term.namespace_selector = d.label_selector(r);
    } else if (key == "topologyKey") {
      term.topology_key = InternedString(d.string(r));
    } else if (key == "matchLabelKeys") {
      decode_label_keys(d, r, pod_labels, SelectorOp::kIn, match);
    } else if (key == "mismatchLabelKeys") {
      decode_label_keys(d, r, pod_labels, SelectorOp::kNotIn, mismatch);
    } else {
      return false;
    }
    return true;
  });
  match.insert(match.end(), mismatch.begin(), mismatch.end());
  merge_label_keys(term.selector, term.has_selector, match);
  return term;
}

void decode_pod_affinity(JsonDecoder& d, JsonReader& r, const Labels& pod_labels, std::vector<PodAffinityTerm>& required,
                         std::vector<WeightedPodAffinityTerm>& preferred) {
  d.members(r, [&](std::string_view key) {
    if (key == "requiredDuringSchedulingIgnoredDuringExecution") {
      d.elements(r, [&] { required.push_back(decode_affinity_term(d, r, pod_labels)); });
    } else if (key == "preferredDuringSchedulingIgnoredDuringExecution") {
      d.elements(r, [&] {
        WeightedPodAffinityTerm w;
        d.members(r, [&](std::string_view k) {
          if (k == "weight") w.weight = static_cast<int32_t>(d.integer(r));
          else if (k == "podAffinityTerm") w.term = decode_affinity_term(d, r, pod_labels);
          else return false;
          return true;
        });
        preferred.push_back(std::move(w));
      });
    } else {
      return false;
    }
    return true;
  });
}

std::shared_ptr<const Affinity> decode_affinity(JsonDecoder& d, JsonReader& r, const Labels& pod_labels) {
  auto out = std::make_shared<Affinity>();
  d.members(r, [&](std::string_view key) {
    if (key == "nodeAffinity") {
      d.members(r, [&](std::string_view k) {
        if (k == "requiredDuringSchedulingIgnoredDuringExecution") {
          out->node_required = d.node_selector(r);
        } else if (k == "preferredDuringSchedulingIgnoredDuringExecution") {
          d.elements(r, [&] {
            PreferredSchedulingTerm t;
            d.members(r, [&](std::string_view f) {
              if (f == "weight") t.weight = static_cast<int32_t>(d.integer(r));
              else if (f == "preference") t.preference = d.node_selector_term(r);
              else return false;
              return true;
            });
            out->node_preferred.push_back(std::move(t));
          });
        } else {
          return false;
        }
        return true;
      });
    } else if (key == "podAffinity") {
      decode_pod_affinity(d, r, pod_labels, out->pod_affinity_required, out->pod_affinity_preferred);
    } else if (key == "podAntiAffinity") {
      decode_pod_affinity(d, r, pod_labels, out->pod_anti_affinity_required, out->pod_anti_affinity_preferred);
    } else {
      return false;
    }
    return true;
  });
  if (!out->node_required && out->node_preferred.empty() && out->pod_affinity_required.empty() && out->pod_affinity_preferred.empty() &&
      out->pod_anti_affinity_required.empty() && out->pod_anti_affinity_preferred.empty())
    return nullptr;
  return out;
}

TopologySpreadConstraint decode_spread(JsonDecoder& d, JsonReader& r, const Labels& pod_labels) {
  TopologySpreadConstraint t;
  std::vector<Requirement> match;
  d.members(r, [&](std::string_view key) {
    if (key == "maxSkew") t.max_skew = static_cast<int32_t>(d.integer(r, 1));
    else if (key == "topologyKey") t.topology_key = InternedString(d.string(r));
    else if (key == "whenUnsatisfiable") t.do_not_schedule = d.string(r) != "ScheduleAnyway";
    else if (key == "labelSelector") {
      if (auto sel = d.label_selector(r)) {
        t.selector = std::move(*sel);
        t.has_selector = true;
      }
    } else if (key == "minDomains") {
      if (auto md = d.optional_integer(r)) t.min_domains = static_cast<int32_t>(*md);
    } else if (key == "nodeAffinityPolicy") t.honor_node_affinity = d.string(r) != "Ignore";
    else if (key == "nodeTaintsPolicy") t.honor_node_taints = d.string(r) == "Honor";
    else if (key == "matchLabelKeys") decode_label_keys(d, r, pod_labels, SelectorOp::kIn, match);
    else return false;
    return true;
  });
  merge_label_keys(t.selector, t.has_selector, match);
  return t;
}

Toleration decode_toleration(JsonDecoder& d, JsonReader& r, size_t index) {
  thread_local std::array<Toleration, 4> before;  // the tolerations at the same places in the pod decoded before
  Toleration& last = before[std::min(index, before.size() - 1)];
  Toleration tol;
  d.members(r, [&](std::string_view key) {
    if (key == "key") {
      tol.key = intern_as_before(d.string(r), last.key);
    } else if (key == "operator") {
      auto op = d.string(r);
      if (op == "Exists") tol.op = TolerationOp::kExists;
      else if (op.empty() || op == "Equal") tol.op = TolerationOp::kEqual;
      else d.fail(fmt::format("unknown toleration operator \"{}\": want Equal or Exists", op));
    } else if (key == "value") {
      tol.value = intern_as_before(d.string(r), last.value);
    } else if (key == "effect") {
      auto effect = d.string(r);
      if (effect.empty()) return true;
      auto e = parse_taint_effect(effect);
      if (e) tol.effect = *e;
      else d.fail(e.error().message);
    } else if (key == "tolerationSeconds") {
      tol.toleration_seconds = d.optional_integer(r);
    } else {
      return false;
    }
    return true;
  });
  return tol;
}

void decode_volume(JsonDecoder& d, JsonReader& r, Pod& p) {
  std::string_view name;
  bool ephemeral = false;
  d.members(r, [&](std::string_view key) {
    if (key == "name") {
      name = d.string(r);
      return true;
    }
    if (key == "persistentVolumeClaim") {
      if (!d.at_object(r)) return true;
      std::string_view claim;
      d.members(r, [&](std::string_view k) {
        if (k != "claimName") return false;
        claim = d.string(r);
        return true;
      });
      p.pvc_claims.emplace_back(claim);
      return true;
    }
    // The volume's source only counts when it is there and not null.
    bool present = r.peek() != JsonType::kNull;
    if (key == "emptyDir") p.has_empty_dir |= present;
    else if (key == "hostPath") p.has_host_path |= present;
    else if (key == "ephemeral") ephemeral |= present;
    return false;
  });
  // A generic ephemeral volume is a PVC named <pod>-<volume>.
  if (ephemeral && d.ok()) p.pvc_claims.emplace_back(fmt::format("{}-{}", p.meta.name, name));
}

void decode_spec(JsonDecoder& d, JsonReader& r, Pod& p) {
  bool any_cpu_or_memory = false;
  ResourceList sum;
  // Init containers run one at a time before the regular ones; sidecars (restartPolicy
  // Always) keep running and add to everything after them.
  ResourceList sidecars;
  ResourceList init_peak;
  ResourceList overhead;
  std::vector<HostPort> sidecar_ports;  // after the regular containers' ports, whatever the order in the text
  thread_local InternedString last_node;
  d.members(r, [&](std::string_view key) {
    if (key == "nodeName") {
      p.node_name = intern_as_before(d.string(r), last_node);
    } else if (key == "schedulerName") {
      p.scheduler_name = InternedString(d.string(r));
    } else if (key == "priority") {
      p.priority = static_cast<int32_t>(d.integer(r));
    } else if (key == "terminationGracePeriodSeconds") {
      p.termination_grace_period_seconds = d.optional_integer(r);
    } else if (key == "nodeSelector") {
      p.node_selector = d.string_map(r);
    } else if (key == "containers") {
      d.elements(r, [&] {
        Container c = decode_container(d, r, any_cpu_or_memory);
        sum.add(c.requests);
        p.host_ports.insert(p.host_ports.end(), c.host_ports.begin(), c.host_ports.end());
      });
    } else if (key == "initContainers") {
      d.elements(r, [&] {
        Container c = decode_container(d, r, any_cpu_or_memory);
        if (c.restart_always) {
          sidecars.add(c.requests);
          init_peak.max_with(sidecars);
          sidecar_ports.insert(sidecar_ports.end(), c.host_ports.begin(), c.host_ports.end());
        } else {
          c.requests.add(sidecars);
          init_peak.max_with(c.requests);
        }
      });
    } else if (key == "overhead") {
      overhead = d.resource_list(r);
    } else if (key == "tolerations") {
      Gather<Toleration, 8> tolerations;
      size_t index = 0;
      d.elements(r, [&] { tolerations.push_back(decode_toleration(d, r, index++)); });
      p.tolerations = Tolerations(tolerations.items());
    } else if (key == "affinity") {
      p.affinity = decode_affinity(d, r, p.meta.labels);
    } else if (key == "topologySpreadConstraints") {
      d.elements(r, [&] { p.topology_spread.push_back(decode_spread(d, r, p.meta.labels)); });
    } else if (key == "volumes") {
      d.elements(r, [&] { decode_volume(d, r, p); });
    } else {
      return false;
    }
    return true;
  });
  p.host_ports.insert(p.host_ports.end(), sidecar_ports.begin(), sidecar_ports.end());
  sum.add(sidecars);
  sum.max_with(init_peak);
  sum.add(overhead);
  p.requests = std::move(sum);
  p.best_effort = !any_cpu_or_memory;
}

void decode_status(JsonDecoder& d, JsonReader& r, Pod& p) {
  d.members(r, [&](std::string_view key) {
    if (key == "phase") {
      auto phase = d.string(r);
      if (phase == "Running") p.phase = PodPhase::kRunning;
      else if (phase == "Succeeded") p.phase = PodPhase::kSucceeded;
      else if (phase == "Failed") p.phase = PodPhase::kFailed;
      else if (phase == "Unknown") p.phase = PodPhase::kUnknown;
      else p.phase = PodPhase::kPending;
    } else if (key == "nominatedNodeName") {
      p.nominated_node = InternedString(d.string(r));
    } else if (key == "conditions") {
      d.elements(r, [&] {
        std::string_view type, status, reason;
        d.members(r, [&](std::string_view k) {
          if (k == "type") type = d.string(r);
          else if (k == "status") status = d.string(r);
          else if (k == "reason") reason = d.string(r);
          else return false;
          return true;
        });
        auto st = parse_condition_status(status);
        if (type == "Ready") {
          p.ready = st == ConditionStatus::kTrue;
        } else if (type == "PodScheduled") {
          p.scheduled = st;
          p.unschedulable = st == ConditionStatus::kFalse && reason == "Unschedulable";
        }
      });
    } else {
      return false;
    }
    return true;
  });
}

void decode_pod_meta(JsonDecoder& d, JsonReader& r, Pod& p) {
  auto on_annotation = [&](std::string_view k, std::string_view value) {
    if (k == "kubernetes.io/config.mirror") p.mirror = true;
    else if (k == "cluster-autoscaler.kubernetes.io/safe-to-evict") {
      if (value == "true") p.safe_to_evict = true;
      else if (value == "false") p.safe_to_evict = false;
    } else if (k == "karpenter.sh/do-not-disrupt") p.do_not_disrupt = value == "true";
    else if (k == "spotshift.io/do-not-move") p.do_not_move = value == "true";
  };
  decode_meta(d, r, p.meta, on_annotation, [&](std::string_view k) {
    if (k == "deletionGracePeriodSeconds") {
      p.deletion_grace_period_seconds = d.optional_integer(r);
    } else if (k == "ownerReferences") {
      d.elements(r, [&] {
        thread_local OwnerReference last;  // the pod decoded before's
        OwnerReference ref;
        bool controller = false;
        d.members(r, [&](std::string_view f) {
          if (f == "controller") controller = d.boolean(r);
          else if (f == "apiVersion") ref.api_version = intern_as_before(d.string(r), last.api_version);
          else if (f == "kind") ref.kind = intern_as_before(d.string(r), last.kind);
          else if (f == "name") ref.name = intern_as_before(d.string(r), last.name);
          else if (f == "uid") ref.uid = intern_as_before(d.string(r), last.uid);
          else return false;
          return true;
        });
        if (controller) p.controller = std::move(ref);
      });
    } else {
      return false;
    }
    return true;
  });
}

}  // namespace

bool Pod::selects_node(const Labels& node_labels, std::string_view node_name) const {
  for (const auto& [k, v] : node_selector)
    if (const InternedString* have = node_labels.get(k); !have || *have != v) return false;
  return !affinity || !affinity->node_required || affinity->node_required->matches(node_labels, node_name);
}

bool Pod::same_content(const Pod& other) const { return equal_except_rv(*this, other); }

bool Pod::key_less(const Pod& other) const {
  std::string_view a = meta.namespace_.view(), b = other.meta.namespace_.view();
  if (a == b) return meta.name < other.meta.name;
  if (a.empty() || b.empty()) return key() < other.key();  // no namespace: the key is the bare name
  // "a/..." against "b/...": the first difference within the shorter namespace decides; when one
  // namespace is a prefix of the other, its '/' meets the other's next character (never a '/').
  const size_t n = std::min(a.size(), b.size());
  if (int c = a.substr(0, n).compare(b.substr(0, n)); c != 0) return c < 0;
  const auto next = [n](std::string_view s) { return static_cast<unsigned char>(s.size() > n ? s[n] : '/'); };
  return next(a) < next(b);
}

bool Pod::operator==(const Pod& other) const {
  return meta.resource_version == other.meta.resource_version && equal_except_rv(*this, other);
}

Result<void> decode_pod(JsonReader& r, Pod& p) {
  JsonDecoder d("pod");
  if (r.peek() != JsonType::kObject) {
    d.wrong_type("an object", r);
    return d.take_error();
  }
  bool has_meta = false;
  std::string_view spec_text;  // a spec that came before the metadata, read once that is known
  d.members(r, [&](std::string_view key) {
    if (key == "metadata") {
      has_meta = r.peek() == JsonType::kObject;
      decode_pod_meta(d, r, p);
    } else if (key == "spec") {
      // matchLabelKeys and ephemeral volumes need the pod's labels and name.
      if (has_meta) decode_spec(d, r, p);
      else r.read_raw(spec_text);
    } else if (key == "status") {
      decode_status(d, r, p);
    } else {
      return false;
    }
    return true;
  });
  if (!has_meta) d.fail("metadata is missing");
  if (!spec_text.empty() && d.ok()) {
    JsonReader spec(spec_text);
    auto s = d.field("spec");
    decode_spec(d, spec, p);
  }
  if (!d.ok()) return d.take_error();
  if (p.meta.name.empty()) {
    d.fail("metadata.name is empty");
    return d.take_error();
  }
  return Result<void>{};
}

Result<Pod> decode_pod(JsonReader& r) {
  Pod p;
  if (auto done = decode_pod(r, p); !done) return done.error();
  return p;
}

Result<Pod> decode_pod(std::string_view json) {
  return decode_whole("pod", json, [](JsonReader& r) { return decode_pod(r); });
}

}  // namespace spotshift::model
