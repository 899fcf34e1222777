#pragma once
// Small builders for scheduling tests: make_node("n1").cpu("4").label("zone", "a"),
// make_pod("web-1").cpu("500m").on("n1").

#include "model/json.hpp"
#include "model/node.hpp"
#include "model/pod.hpp"
#include "sched/snapshot.hpp"

#include <fmt/format.h>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace spotshift::sched::testing {

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name) : name_(std::move(name)) { labels_["kubernetes.io/hostname"] = name_; }
  // One setter a line.
  // clang-format off
  NodeBuilder& cpu(std::string v) { cpu_ = std::move(v); return *this; }
  NodeBuilder& memory(std::string v) { memory_ = std::move(v); return *this; }
  NodeBuilder& pods(int n) { pods_ = n; return *this; }
  NodeBuilder& scalar(std::string k, std::string v) { scalars_[k] = v; return *this; }
  NodeBuilder& label(std::string k, std::string v) { labels_[k] = std::move(v); return *this; }
  NodeBuilder& taint(std::string k, std::string v, std::string effect) { taints_.push_back({k, v, effect}); return *this; }
  NodeBuilder& unschedulable() { unschedulable_ = true; return *this; }
  NodeBuilder& condition(std::string type, std::string status) { conditions_[type] = std::move(status); return *this; }
  NodeBuilder& annotation(std::string k, std::string v) { annotations_[k] = std::move(v); return *this; }
  // clang-format on
  std::string json() const {
    std::string labels, taints, scalars, conds, annotations;
    for (const auto& [k, v] : labels_) labels += fmt::format("{}\"{}\":\"{}\"", labels.empty() ? "" : ",", k, v);
    for (const auto& [k, v] : annotations_) annotations += fmt::format("{}\"{}\":\"{}\"", annotations.empty() ? "" : ",", k, v);
    for (const auto& t : taints_)
      taints += fmt::format("{}{{\"key\":\"{}\",\"value\":\"{}\",\"effect\":\"{}\"}}", taints.empty() ? "" : ",", t[0], t[1], t[2]);
    for (const auto& [k, v] : scalars_) scalars += fmt::format(",\"{}\":\"{}\"", k, v);
    auto c = conditions_;
    if (!c.count("Ready")) c["Ready"] = "True";
    for (const auto& [k, v] : c) conds += fmt::format("{}{{\"type\":\"{}\",\"status\":\"{}\"}}", conds.empty() ? "" : ",", k, v);
    return fmt::format(
        R"({{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{}","labels":{{{}}},"annotations":{{{}}}}},"spec":{{"unschedulable":{},"taints":[{}]}},
      "status":{{"allocatable":{{"cpu":"{}","memory":"{}","pods":"{}"{}}},"conditions":[{}]}}}})",
        name_, labels, annotations, unschedulable_ ? "true" : "false", taints, cpu_, memory_, pods_, scalars, conds);
  }
  NodePtr build() const { return std::make_shared<const model::Node>(model::decode_node(std::string_view(json())).value()); }
  operator NodePtr() const { return build(); }

 private:
  std::string name_, cpu_ = "4", memory_ = "16Gi";
  int pods_ = 110;
  bool unschedulable_ = false;
  std::map<std::string, std::string> labels_, scalars_, conditions_, annotations_;
  std::vector<std::array<std::string, 3>> taints_;
};

class PodBuilder {
 public:
  explicit PodBuilder(std::string name) : name_(std::move(name)) {}
  // One setter a line.
  // clang-format off
  PodBuilder& ns(std::string v) { ns_ = std::move(v); return *this; }
  PodBuilder& cpu(std::string v) { cpu_ = std::move(v); return *this; }
  PodBuilder& memory(std::string v) { memory_ = std::move(v); return *this; }
  PodBuilder& scalar(std::string k, std::string v) { scalars_[k] = v; return *this; }
  PodBuilder& on(std::string node) { node_ = std::move(node); return *this; }
  PodBuilder& label(std::string k, std::string v) { labels_[k] = std::move(v); return *this; }
  PodBuilder& selector(std::string k, std::string v) { selector_[k] = std::move(v); return *this; }
  PodBuilder& toleration(std::string json) { tolerations_.push_back(std::move(json)); return *this; }
  PodBuilder& host_port(int port) { ports_.push_back(port); return *this; }
  PodBuilder& affinity(std::string json) { affinity_ = std::move(json); return *this; }
  PodBuilder& spread(std::string json) { spread_.push_back(std::move(json)); return *this; }
  PodBuilder& pvc(std::string claim) { pvcs_.push_back(std::move(claim)); return *this; }
  PodBuilder& best_effort() { best_effort_ = true; return *this; }
  PodBuilder& phase(std::string p) { phase_ = std::move(p); return *this; }
  PodBuilder& nominated(std::string node) { nominated_ = std::move(node); return *this; }
  PodBuilder& priority(int p) { priority_ = p; return *this; }
  // The controlling owner: owner("ReplicaSet", "web-abc").
  PodBuilder& owner(std::string kind, std::string name) { owner_ = {std::move(kind), std::move(name)}; return *this; }
  PodBuilder& annotation(std::string k, std::string v) { annotations_[k] = std::move(v); return *this; }
  PodBuilder& empty_dir() { extra_volumes_.push_back(R"({"name":"scratch","emptyDir":{}})"); return *this; }
  PodBuilder& host_path() { extra_volumes_.push_back(R"({"name":"logs","hostPath":{"path":"/var/log"}})"); return *this; }
  PodBuilder& terminating() { terminating_ = true; return *this; }
  PodBuilder& unready() { ready_ = false; return *this; }
  PodBuilder& unschedulable() { unschedulable_ = true; phase_ = "Pending"; return *this; }
  // clang-format on
  std::string json() const {
    std::string labels, sel, scalars, ports, vols, annotations, owners;
    for (const auto& [k, v] : annotations_) annotations += fmt::format("{}\"{}\":\"{}\"", annotations.empty() ? "" : ",", k, v);
    if (!owner_[0].empty())
      owners = fmt::format(R"([{{"apiVersion":"apps/v1","kind":"{}","name":"{}","uid":"uid-{}","controller":true}}])", owner_[0], owner_[1],
                           owner_[1]);
    for (const auto& v : extra_volumes_) vols += fmt::format("{}{}", vols.empty() ? "" : ",", v);
    for (const auto& [k, v] : labels_) labels += fmt::format("{}\"{}\":\"{}\"", labels.empty() ? "" : ",", k, v);
    for (const auto& [k, v] : selector_) sel += fmt::format("{}\"{}\":\"{}\"", sel.empty() ? "" : ",", k, v);
    for (const auto& [k, v] : scalars_) scalars += fmt::format(",\"{}\":\"{}\"", k, v);
    for (int p : ports_) ports += fmt::format("{}{{\"containerPort\":{},\"hostPort\":{}}}", ports.empty() ? "" : ",", p, p);
    for (const auto& c : pvcs_)
      vols += fmt::format("{}{{\"name\":\"{}\",\"persistentVolumeClaim\":{{\"claimName\":\"{}\"}}}}", vols.empty() ? "" : ",", c, c);
    // Extended resources and hugepages are never overcommitted: their limit is their request.
    std::string limits = scalars.empty() ? "" : fmt::format(R"(,"limits":{{{}}})", scalars.substr(1));
    std::string resources =
        best_effort_ ? "{}" : fmt::format(R"({{"requests":{{"cpu":"{}","memory":"{}"{}}}{}}})", cpu_, memory_, scalars, limits);
    std::string conditions;
    if (phase_ == "Running" && ready_) conditions = R"({"type":"Ready","status":"True"})";
    if (unschedulable_) conditions = R"({"type":"PodScheduled","status":"False","reason":"Unschedulable"})";
    return fmt::format(R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}","namespace":"{}","uid":"uid-{}-{}","labels":{{{}}},
      "annotations":{{{}}}{}{}}},
      "spec":{{"nodeName":"{}",{}"nodeSelector":{{{}}},"tolerations":[{}],{}"topologySpreadConstraints":[{}],"volumes":[{}],
      "containers":[{{"name":"c","resources":{},"ports":[{}]}}]}},"status":{{"phase":"{}",{}"conditions":[{}]}}}})",
                       name_, ns_, ns_, name_, labels, annotations, owners.empty() ? "" : ",\"ownerReferences\":" + owners,
                       terminating_ ? R"(,"deletionTimestamp":"2026-01-01T00:00:00Z")" : "", node_,
                       priority_ ? fmt::format("\"priority\":{},", *priority_) : "", sel, fmt::join(tolerations_, ","),
                       affinity_.empty() ? "" : "\"affinity\":" + affinity_ + ",", fmt::join(spread_, ","), vols, resources, ports, phase_,
                       nominated_.empty() ? "" : fmt::format("\"nominatedNodeName\":\"{}\",", nominated_), conditions);
  }
  PodPtr build() const { return std::make_shared<const model::Pod>(model::decode_pod(std::string_view(json())).value()); }
  operator PodPtr() const { return build(); }

 private:
  std::string name_, ns_ = "default", cpu_ = "100m", memory_ = "128Mi", node_, affinity_, phase_ = "Running", nominated_;
  std::map<std::string, std::string> labels_, selector_, scalars_, annotations_;
  std::vector<std::string> tolerations_, spread_, pvcs_, extra_volumes_;
  std::vector<int> ports_;
  std::optional<int> priority_;
  std::array<std::string, 2> owner_;
  bool best_effort_ = false, terminating_ = false, ready_ = true, unschedulable_ = false;
};

inline NodeBuilder make_node(std::string name) { return NodeBuilder(std::move(name)); }
inline PodBuilder make_pod(std::string name) { return PodBuilder(std::move(name)); }

// Every node of a snapshot, as placement candidates.
inline std::vector<int> all_nodes(const ClusterSnapshot& s) {
  std::vector<int> v;
  for (int i = 0; i < s.size(); ++i) v.push_back(i);
  return v;
}

}  // namespace spotshift::sched::testing
