#include "model/workload.hpp"

namespace spotshift::model {

namespace {

bool ignores_disruptions(JsonDecoder& d, const JsonValue& spec) {
  const JsonValue* policy = d.object(spec, "podFailurePolicy");
  if (!policy) return false;
  auto scope = d.field("podFailurePolicy");
  std::optional<bool> decided;
  d.each(*policy, "rules", [&](const JsonValue& rule) {
    if (decided) return;
    if (d.get(rule, "onExitCodes")) {
      decided = false;  // it may match the evicted pod first
      return;
    }
    bool disruption = false;
    d.each(rule, "onPodConditions", [&](const JsonValue& c) {
      auto status = d.optional_string(c, "status");
      if (d.string(c, "type") == "DisruptionTarget" && (!status || *status == "True")) disruption = true;
    });
    if (disruption) decided = d.string(rule, "action") == "Ignore";
  });
  return decided.value_or(false);
}

}  // namespace

Result<WorkloadController> decode_workload_controller(const JsonValue& v, std::string_view kind) {
  JsonDecoder d(kind);
  WorkloadController c;
  c.kind = std::string(kind);
  decode_meta(d, v, c.meta, [](std::string_view, std::string_view) {});
  if (kind == "Job")
    if (const JsonValue* spec = d.object(v, "spec")) {
      auto scope = d.field("spec");
      c.ignores_disruptions = ignores_disruptions(d, *spec);
    }
  if (!d.ok()) return d.take_error();
  return c;
}

}  // namespace spotshift::model
