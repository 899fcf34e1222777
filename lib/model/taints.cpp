#include "model/taints.hpp"

#include <fmt/format.h>

namespace spotshift::model {

Result<TaintEffect> parse_taint_effect(std::string_view s) {
  if (s == "NoSchedule") return TaintEffect::kNoSchedule;
  if (s == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (s == "NoExecute") return TaintEffect::kNoExecute;
  return Error::invalid(fmt::format("unknown taint effect \"{}\": want NoSchedule, PreferNoSchedule or NoExecute", s));
}

std::string_view to_string(TaintEffect e) {
  switch (e) {
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "?";
}

std::string Taint::to_string() const {
  if (value.empty()) return fmt::format("{}:{}", key.view(), model::to_string(effect));
  return fmt::format("{}={}:{}", key.view(), value.view(), model::to_string(effect));
}

bool Toleration::tolerates(const Taint& taint) const {
  if (effect && *effect != taint.effect) return false;
  if (key.empty()) return op == TolerationOp::kExists;
  if (key != taint.key) return false;
  return op == TolerationOp::kExists || value == taint.value;
}

size_t TolerationHash::operator()(const Toleration& t) const noexcept {
  size_t h = std::hash<InternedString>()(t.key) * 31 + std::hash<InternedString>()(t.value);
  h = h * 31 + static_cast<size_t>(t.op) * 8 + (t.effect ? 1 + static_cast<size_t>(*t.effect) : 0);
  return h * 31 + (t.toleration_seconds ? std::hash<int64_t>()(*t.toleration_seconds) + 1 : 0);
}

bool tolerated(std::span<const Toleration> tolerations, const Taint& taint) {
  for (const auto& t : tolerations)
    if (t.tolerates(taint)) return true;
  return false;
}

const Taint* first_untolerated(std::span<const Toleration> tolerations, const std::vector<Taint>& taints, bool no_schedule,
                               bool prefer_no_schedule, bool no_execute) {
  for (const auto& taint : taints) {
    bool considered = (taint.effect == TaintEffect::kNoSchedule && no_schedule) ||
                      (taint.effect == TaintEffect::kPreferNoSchedule && prefer_no_schedule) ||
                      (taint.effect == TaintEffect::kNoExecute && no_execute);
    if (considered && !tolerated(tolerations, taint)) return &taint;
  }
  return nullptr;
}

}  // namespace spotshift::model
