#pragma once
// Steering (spec.steering: Preferred): a drain's plan names a spot node for every pod it moves,
// and the cluster's scheduler places the replacement with its own scores. With steering, the
// evictor writes down, just before each eviction, the spot node the plan chose for the pod; the
// operator's mutating admission webhook then gives the next pod the same controller creates (for
// a StatefulSet: the pod of the same name) a preferred node affinity, weight 100, for that node.
//
// Preferred, never required: a stale plan never strands a pod. Each steer is used once, expires
// shortly after its eviction (the longest the evictor waits for the replacement) and goes when
// its drain ends; a pod no steer matches is let through untouched.

#include "core/error.hpp"
#include "core/time.hpp"

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace spotshift::drain {

enum class Steering : uint8_t { kOff, kPreferred };
std::string_view to_string(Steering s);

// The weight of the preferred node affinity term a steer adds (the highest the API allows).
inline constexpr int kSteeringWeight = 100;
// The annotation a steered pod gets: the spot node it was steered to.
inline constexpr std::string_view kSteeredToAnnotation = "spotshift.io/steered-to";

struct Steer {
  std::string ns;
  std::string controller_uid;
  std::string controller_kind;  // "StatefulSet": matched by pod name too
  std::string pod_name;         // the evicted pod
  std::string target;           // the spot node the plan chose
  std::string drained_node;     // the node being drained
  std::string policy;
  Time expires{};
};

// The steers of the drains in progress (one process-wide book: the webhook serves every policy).
class SteeringBook {
 public:
  void add(Steer steer);
  // The eviction of this pod did not happen (refused, or the pod was already gone).
  void withdraw(std::string_view ns, std::string_view pod_name);
  // The drain of `node` ended: its unused steers go.
  void drop_drain(std::string_view node);
  // The steer for a pod being created in `ns` by the controller `controller_uid` (kind
  // `controller_kind`), named `name` (empty when it has only a generateName): the oldest unexpired
  // one of that controller (for a StatefulSet, the one of the same pod name). Removed from the
  // book (each steer is used once) unless `keep`: a dry run has no side effects. Expired steers
  // are dropped on the way.
  std::optional<Steer> take(std::string_view ns, std::string_view controller_uid, std::string_view controller_kind, std::string_view name,
                            Time now, bool keep = false);
  size_t size() const;

 private:
  void erase_where(const std::function<bool(const Steer&)>& pred);

  // By "namespace/controller uid", in the order the evictions were made.
  std::map<std::string, std::deque<Steer>, std::less<>> steers_;
};

// What the webhook did with one AdmissionReview.
struct AdmissionAnswer {
  std::string body;            // the AdmissionReview response (JSON)
  std::optional<Steer> steer;  // the steer applied, if any
  std::string pod;             // "namespace/name" (or generateName) of the pod, for logs
  std::string controller;      // "Kind/name (uid)" of its controller, for logs
};

// Answers an admission.k8s.io/v1 AdmissionReview for a pod CREATE: always allowed; with a JSON
// patch adding the steer's preferred node affinity term (and the spotshift.io/steered-to
// annotation) when the book has one for the pod (a dry run leaves it in the book). Anything else (another operation, kind, a pod
// without a controller) is allowed untouched. A body that is not an AdmissionReview is an error
// (HTTP 400).
Result<AdmissionAnswer> answer_admission(std::string_view body, SteeringBook& book, Time now);

}  // namespace spotshift::drain
