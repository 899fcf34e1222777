#pragma once
// Node taints and pod tolerations with the scheduler's matching rules.

#include "core/error.hpp"
#include "model/intern.hpp"

#include <optional>
#include <string>
#include <vector>

namespace spotshift::model {

enum class TaintEffect : uint8_t { kNoSchedule, kPreferNoSchedule, kNoExecute };

Result<TaintEffect> parse_taint_effect(std::string_view s);
std::string_view to_string(TaintEffect e);

struct Taint {
  InternedString key;
  InternedString value;
  TaintEffect effect = TaintEffect::kNoSchedule;

  // "key=value:Effect", or "key:Effect" without a value, as kubectl prints taints.
  std::string to_string() const;
  bool operator==(const Taint&) const = default;
};

enum class TolerationOp : uint8_t { kEqual, kExists };

struct Toleration {
  InternedString key;               // empty with Exists: matches every key
  TolerationOp op = TolerationOp::kEqual;
  InternedString value;             // ignored with Exists
  std::optional<TaintEffect> effect;  // empty: matches every effect
  std::optional<int64_t> toleration_seconds;

  // A toleration tolerates a taint when the effect is empty or equal, the key is empty with
  // Exists or equal, and (with Equal) the values are equal.
  bool tolerates(const Taint& taint) const;
  bool operator==(const Toleration&) const = default;
};

bool tolerated(const std::vector<Toleration>& tolerations, const Taint& taint);

// The first taint with one of the given effects that no toleration tolerates, or nullptr.
const Taint* first_untolerated(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints,
                               bool no_schedule, bool prefer_no_schedule, bool no_execute);

}  // namespace spotshift::model
