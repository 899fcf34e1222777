#include "model/pod.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spotshift::model {

std::string_view to_string(PodPhase p) {
  switch (p) {
    case PodPhase::kPending: return "Pending";
    case PodPhase::kRunning: return "Running";
    case PodPhase::kSucceeded: return "Succeeded";
    case PodPhase::kFailed: return "Failed";
    case PodPhase::kUnknown: return "Unknown";
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
  return ma == b.meta && a.node_name == b.node_name && a.scheduler_name == b.scheduler_name && a.phase == b.phase &&
         a.controller == b.controller && a.priority == b.priority &&
         a.termination_grace_period_seconds == b.termination_grace_period_seconds &&
         a.deletion_grace_period_seconds == b.deletion_grace_period_seconds && a.requests == b.requests &&
         a.node_selector == b.node_selector && equal_affinity(a.affinity, b.affinity) &&
         a.tolerations == b.tolerations && a.topology_spread == b.topology_spread && a.host_ports == b.host_ports &&
         a.pvc_claims == b.pvc_claims && a.mirror == b.mirror && a.has_empty_dir == b.has_empty_dir &&
         a.has_host_path == b.has_host_path && a.best_effort == b.best_effort && a.ready == b.ready &&
         a.scheduled == b.scheduled && a.unschedulable == b.unschedulable && a.safe_to_evict == b.safe_to_evict &&
         a.do_not_disrupt == b.do_not_disrupt && a.do_not_move == b.do_not_move;
}

// A container's requests; a resource with a limit but no request is requested at its limit, as
// the apiserver defaults it.
ResourceList container_requests(JsonDecoder& d, const JsonValue& c, bool& any_cpu_or_memory) {
  ResourceList req;
  const JsonValue* res = d.object(c, "resources");
  if (!res) return req;
  auto scope = d.field("resources");
  req = d.resource_list(*res, "requests");
  const JsonValue* requests = d.object(*res, "requests");
  d.each_member(*res, "limits", [&](std::string_view name, const JsonValue& v) {
    if (name == kResourceCpu || name == kResourceMemory) any_cpu_or_memory = true;
    if (requests && requests->HasMember(json_key(name))) return;
    if (auto q = d.quantity(v)) req.set(name, name == kResourceCpu ? q->milli_value() : q->value());
  });
  if (requests) {
    for (auto it = requests->MemberBegin(); it != requests->MemberEnd(); ++it) {
      std::string_view name(it->name.GetString(), it->name.GetStringLength());
      if (name == kResourceCpu || name == kResourceMemory) any_cpu_or_memory = true;
    }
  }
  return req;
}

void decode_host_ports(JsonDecoder& d, const JsonValue& c, std::vector<HostPort>& out) {
  d.each(c, "ports", [&](const JsonValue& p) {
    int64_t host_port = d.integer(p, "hostPort");
    if (host_port <= 0) return;
    HostPort hp;
    hp.port = static_cast<int32_t>(host_port);
    auto proto = d.string(p, "protocol");
    hp.protocol = proto == "UDP" ? Protocol::kUDP : proto == "SCTP" ? Protocol::kSCTP : Protocol::kTCP;
    auto ip = d.string(p, "hostIP");
    hp.host_ip = InternedString(ip == "0.0.0.0" ? std::string_view{} : ip);
    out.push_back(hp);
  });
}

PodAffinityTerm decode_affinity_term(JsonDecoder& d, const JsonValue& t, const Labels& pod_labels) {
  PodAffinityTerm term;
  if (auto sel = d.label_selector(t, "labelSelector")) {
    term.selector = std::move(*sel);
    term.has_selector = true;
  }
  d.each(t, "namespaces", [&](const JsonValue& ns) {
    if (!ns.IsString()) return d.wrong_type("a string", ns);
    term.namespaces.emplace_back(std::string_view(ns.GetString(), ns.GetStringLength()));
  });
  term.namespace_selector = d.label_selector(t, "namespaceSelector");
  term.topology_key = InternedString(d.string(t, "topologyKey"));
  // matchLabelKeys / mismatchLabelKeys narrow the selector by the incoming pod's own labels.
  std::vector<Requirement> extra;
  auto merge = [&](std::string_view key, SelectorOp op) {
    d.each(t, key, [&](const JsonValue& k) {
      if (!k.IsString()) return d.wrong_type("a string", k);
      std::string_view label(k.GetString(), k.GetStringLength());
      if (auto v = pod_labels.get(label)) {
        auto r = Requirement::make(label, op, {v->str()});
        if (r) extra.push_back(std::move(*r));
      }
    });
  };
  merge("matchLabelKeys", SelectorOp::kIn);
  merge("mismatchLabelKeys", SelectorOp::kNotIn);
  if (!extra.empty() && term.has_selector) {
    auto reqs = term.selector.requirements();
    reqs.insert(reqs.end(), extra.begin(), extra.end());
    term.selector = LabelSelector(std::move(reqs));
  }
  return term;
}

std::shared_ptr<const Affinity> decode_affinity(JsonDecoder& d, const JsonValue& spec, const Labels& pod_labels) {
  const JsonValue* a = d.object(spec, "affinity");
  if (!a) return nullptr;
  auto scope = d.field("affinity");
  auto out = std::make_shared<Affinity>();
  if (const JsonValue* na = d.object(*a, "nodeAffinity")) {
    auto s = d.field("nodeAffinity");
    out->node_required = d.node_selector(*na, "requiredDuringSchedulingIgnoredDuringExecution");
    d.each(*na, "preferredDuringSchedulingIgnoredDuringExecution", [&](const JsonValue& p) {
      PreferredSchedulingTerm t;
      t.weight = static_cast<int32_t>(d.integer(p, "weight"));
      if (const JsonValue* pref = d.object(p, "preference")) {
        auto f = d.field("preference");
        t.preference = d.node_selector_term(*pref);
      }
      out->node_preferred.push_back(std::move(t));
    });
  }
  auto pod_terms = [&](const char* key, std::vector<PodAffinityTerm>& required,
                       std::vector<WeightedPodAffinityTerm>& preferred) {
    const JsonValue* pa = d.object(*a, key);
    if (!pa) return;
    auto s = d.field(key);
    d.each(*pa, "requiredDuringSchedulingIgnoredDuringExecution",
           [&](const JsonValue& t) { required.push_back(decode_affinity_term(d, t, pod_labels)); });
    d.each(*pa, "preferredDuringSchedulingIgnoredDuringExecution", [&](const JsonValue& p) {
      WeightedPodAffinityTerm w;
      w.weight = static_cast<int32_t>(d.integer(p, "weight"));
      if (const JsonValue* t = d.object(p, "podAffinityTerm")) {
        auto f = d.field("podAffinityTerm");
        w.term = decode_affinity_term(d, *t, pod_labels);
      }
      preferred.push_back(std::move(w));
    });
  };
  pod_terms("podAffinity", out->pod_affinity_required, out->pod_affinity_preferred);
  pod_terms("podAntiAffinity", out->pod_anti_affinity_required, out->pod_anti_affinity_preferred);
  if (!out->node_required && out->node_preferred.empty() && out->pod_affinity_required.empty() &&
      out->pod_affinity_preferred.empty() && out->pod_anti_affinity_required.empty() &&
      out->pod_anti_affinity_preferred.empty())
    return nullptr;
  return out;
}

void decode_spread(JsonDecoder& d, const JsonValue& spec, const Labels& pod_labels,
                   std::vector<TopologySpreadConstraint>& out) {
  d.each(spec, "topologySpreadConstraints", [&](const JsonValue& c) {
    TopologySpreadConstraint t;
    t.max_skew = static_cast<int32_t>(d.integer(c, "maxSkew", 1));
    t.topology_key = InternedString(d.string(c, "topologyKey"));
    t.do_not_schedule = d.string(c, "whenUnsatisfiable") != "ScheduleAnyway";
    if (auto sel = d.label_selector(c, "labelSelector")) {
      t.selector = std::move(*sel);
      t.has_selector = true;
    }
    if (auto md = d.optional_integer(c, "minDomains")) t.min_domains = static_cast<int32_t>(*md);
    t.honor_node_affinity = d.string(c, "nodeAffinityPolicy") != "Ignore";
    t.honor_node_taints = d.string(c, "nodeTaintsPolicy") == "Honor";
    std::vector<Requirement> extra;
    d.each(c, "matchLabelKeys", [&](const JsonValue& k) {
      if (!k.IsString()) return d.wrong_type("a string", k);
      std::string_view label(k.GetString(), k.GetStringLength());
      if (auto v = pod_labels.get(label))
        if (auto r = Requirement::make(label, SelectorOp::kIn, {v->str()})) extra.push_back(std::move(*r));
    });
    if (!extra.empty() && t.has_selector) {
      auto reqs = t.selector.requirements();
      reqs.insert(reqs.end(), extra.begin(), extra.end());
      t.selector = LabelSelector(std::move(reqs));
    }
    out.push_back(std::move(t));
  });
}

}  // namespace

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

size_t Pod::memory_bytes() const {
  size_t bytes = sizeof(Pod) + meta.heap_bytes() + requests.heap_bytes() + node_selector.heap_bytes() +
                 tolerations.capacity() * sizeof(Toleration) +
                 topology_spread.capacity() * sizeof(TopologySpreadConstraint) +
                 host_ports.capacity() * sizeof(HostPort) + pvc_claims.capacity() * sizeof(InternedString);
  if (controller && controller->uid.capacity() > 15) bytes += controller->uid.capacity() + 1;
  if (affinity) bytes += sizeof(Affinity) + 64;  // terms are rare; a rough allowance
  return bytes;
}

Result<Pod> decode_pod(const JsonValue& v) {
  JsonDecoder d("pod");
  Pod p;
  if (!v.IsObject()) {
    d.wrong_type("an object", v);
    return d.take_error();
  }
  decode_meta(d, v, p.meta, [&](std::string_view k, std::string_view value) {
    if (k == "kubernetes.io/config.mirror") p.mirror = true;
    else if (k == "cluster-autoscaler.kubernetes.io/safe-to-evict") {
      if (value == "true") p.safe_to_evict = true;
      else if (value == "false") p.safe_to_evict = false;
    } else if (k == "karpenter.sh/do-not-disrupt") p.do_not_disrupt = value == "true";
    else if (k == "spotshift.io/do-not-move") p.do_not_move = value == "true";
  });
  if (const JsonValue* m = d.object(v, "metadata")) {
    auto s = d.field("metadata");
    p.deletion_grace_period_seconds = d.optional_integer(*m, "deletionGracePeriodSeconds");
    d.each(*m, "ownerReferences", [&](const JsonValue& o) {
      if (!d.boolean(o, "controller")) return;
      OwnerReference ref;
      ref.api_version = InternedString(d.string(o, "apiVersion"));
      ref.kind = InternedString(d.string(o, "kind"));
      ref.name = InternedString(d.string(o, "name"));
      ref.uid = std::string(d.string(o, "uid"));
      p.controller = std::move(ref);
    });
  }
  if (const JsonValue* spec = d.object(v, "spec")) {
    auto s = d.field("spec");
    p.node_name = InternedString(d.string(*spec, "nodeName"));
    p.scheduler_name = InternedString(d.string(*spec, "schedulerName"));
    p.priority = static_cast<int32_t>(d.integer(*spec, "priority"));
    p.termination_grace_period_seconds = d.optional_integer(*spec, "terminationGracePeriodSeconds");
    p.node_selector = d.string_map(*spec, "nodeSelector");

    bool any_cpu_or_memory = false;
    ResourceList sum;
    d.each(*spec, "containers", [&](const JsonValue& c) {
      sum.add(container_requests(d, c, any_cpu_or_memory));
      decode_host_ports(d, c, p.host_ports);
    });
    // Init containers run one at a time before the regular ones; sidecars (restartPolicy
    // Always) keep running and add to everything after them.
    ResourceList sidecars;
    ResourceList init_peak;
    d.each(*spec, "initContainers", [&](const JsonValue& c) {
      ResourceList req = container_requests(d, c, any_cpu_or_memory);
      if (d.string(c, "restartPolicy") == "Always") {
        sidecars.add(req);
        init_peak.max_with(sidecars);
        decode_host_ports(d, c, p.host_ports);
      } else {
        req.add(sidecars);
        init_peak.max_with(req);
      }
    });
    sum.add(sidecars);
    sum.max_with(init_peak);
    sum.add(d.resource_list(*spec, "overhead"));
    p.requests = std::move(sum);
    p.best_effort = !any_cpu_or_memory;

    d.each(*spec, "tolerations", [&](const JsonValue& t) {
      Toleration tol;
      tol.key = InternedString(d.string(t, "key"));
      auto op = d.string(t, "operator");
      if (op == "Exists") tol.op = TolerationOp::kExists;
      else if (op.empty() || op == "Equal") tol.op = TolerationOp::kEqual;
      else {
        auto f = d.field("operator");
        return d.fail(fmt::format("unknown toleration operator \"{}\": want Equal or Exists", op));
      }
      tol.value = InternedString(d.string(t, "value"));
      auto effect = d.string(t, "effect");
      if (!effect.empty()) {
        auto e = parse_taint_effect(effect);
        if (!e) {
          auto f = d.field("effect");
          return d.fail(e.error().message);
        }
        tol.effect = *e;
      }
      tol.toleration_seconds = d.optional_integer(t, "tolerationSeconds");
      p.tolerations.push_back(tol);
    });
    p.affinity = decode_affinity(d, *spec, p.meta.labels);
    decode_spread(d, *spec, p.meta.labels, p.topology_spread);
    d.each(*spec, "volumes", [&](const JsonValue& vol) {
      if (d.get(vol, "emptyDir")) p.has_empty_dir = true;
      if (d.get(vol, "hostPath")) p.has_host_path = true;
      if (const JsonValue* pvc = d.object(vol, "persistentVolumeClaim")) {
        auto f = d.field("persistentVolumeClaim");
        p.pvc_claims.emplace_back(d.string(*pvc, "claimName"));
      }
      if (d.get(vol, "ephemeral")) {
        // A generic ephemeral volume is a PVC named <pod>-<volume>.
        p.pvc_claims.emplace_back(fmt::format("{}-{}", p.meta.name, d.string(vol, "name")));
      }
    });
  }
  if (const JsonValue* status = d.object(v, "status")) {
    auto s = d.field("status");
    auto phase = d.string(*status, "phase");
    if (phase == "Running") p.phase = PodPhase::kRunning;
    else if (phase == "Succeeded") p.phase = PodPhase::kSucceeded;
    else if (phase == "Failed") p.phase = PodPhase::kFailed;
    else if (phase == "Unknown") p.phase = PodPhase::kUnknown;
    else p.phase = PodPhase::kPending;
    d.each(*status, "conditions", [&](const JsonValue& c) {
      auto type = d.string(c, "type");
      auto st = parse_condition_status(d.string(c, "status"));
      if (type == "Ready") p.ready = st == ConditionStatus::kTrue;
      else if (type == "PodScheduled") {
        p.scheduled = st;
        p.unschedulable = st == ConditionStatus::kFalse && d.string(c, "reason") == "Unschedulable";
      }
    });
  }
  if (!d.ok()) return d.take_error();
  if (p.meta.name.empty()) {
    d.fail("metadata.name is empty");
    return d.take_error();
  }
  return p;
}

}  // namespace spotshift::model
