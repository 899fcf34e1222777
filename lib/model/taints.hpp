#pragma once
// Node taints and pod tolerations with the scheduler's matching rules.

#include "core/error.hpp"
#include "model/intern.hpp"
#include "model/interned_list.hpp"

#include <optional>
#include <span>
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
  InternedString key;    // empty with Exists: matches every key
  InternedString value;  // ignored with Exists
  std::optional<int64_t> toleration_seconds;
  TolerationOp op = TolerationOp::kEqual;
  std::optional<TaintEffect> effect;  // empty: matches every effect

  // A toleration tolerates a taint when the effect is empty or equal, the key is empty with
  // Exists or equal, and (with Equal) the values are equal.
  bool tolerates(const Taint& taint) const;
  bool operator==(const Toleration&) const = default;
};

struct TolerationHash {
  size_t operator()(const Toleration& t) const noexcept;
};

// A pod's tolerations, kept once per distinct list: most pods carry the same ones (the two
// DefaultTolerationSeconds adds), so a pod holds a pointer, and equal lists are the same list.
using Tolerations = InternedList<Toleration, TolerationHash>;

bool tolerated(std::span<const Toleration> tolerations, const Taint& taint);

// The first taint with one of the given effects that no toleration tolerates, or nullptr.
const Taint* first_untolerated(std::span<const Toleration> tolerations, const std::vector<Taint>& taints, bool no_schedule,
                               bool prefer_no_schedule, bool no_execute);

}  // namespace spotshift::model
