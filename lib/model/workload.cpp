#include "model/workload.hpp"

namespace spotshift::model {

namespace {

// Whether a Job's spec.podFailurePolicy ignores a pod's disruption: the first rule that matches
// a DisruptionTarget condition decides, and a rule on exit codes may match the evicted pod first.
bool ignores_disruptions(JsonDecoder& d, JsonReader& r) {
  std::optional<bool> decided;
  d.members(r, [&](std::string_view key) {
    if (key != "rules") return false;
    d.elements(r, [&] {
      bool exit_codes = false, disruption = false;
      std::string_view action;
      d.members(r, [&](std::string_view f) {
        if (f == "onExitCodes") {
          exit_codes = r.peek() != JsonType::kNull;
          r.skip();
        } else if (f == "action") {
          action = d.string(r);
        } else if (f == "onPodConditions") {
          d.elements(r, [&] {
            std::string_view type;
            std::optional<std::string_view> status;
            d.members(r, [&](std::string_view g) {
              if (g == "type") type = d.string(r);
              else if (g == "status") status = d.optional_string(r);
              else return false;
              return true;
            });
            if (type == "DisruptionTarget" && (!status || *status == "True")) disruption = true;
          });
        } else {
          return false;
        }
        return true;
      });
      if (decided) return;
      if (exit_codes) decided = false;
      else if (disruption) decided = action == "Ignore";
    });
    return true;
  });
  return decided.value_or(false);
}

}  // namespace

Result<WorkloadController> decode_workload_controller(JsonReader& r, std::string_view kind) {
  JsonDecoder d(kind);
  WorkloadController c;
  c.kind = std::string(kind);
  auto done = decode_object(d, r, c.meta, [&](std::string_view key) {
    if (key != "spec" || kind != "Job") return false;
    d.members(r, [&](std::string_view f) {
      if (f != "podFailurePolicy") return false;
      c.ignores_disruptions = ignores_disruptions(d, r);
      return true;
    });
    return true;
  });
  if (!done) return done.error();
  return c;
}

Result<WorkloadController> decode_workload_controller(std::string_view json, std::string_view kind) {
  return decode_whole(kind, json, [&](JsonReader& r) { return decode_workload_controller(r, kind); });
}

}  // namespace spotshift::model
