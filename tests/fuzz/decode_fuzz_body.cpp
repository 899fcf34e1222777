// One fuzz input through every decoder and parser of lib/model, with round-trip invariants:
// whatever parses must print to a form that parses back to the same value.

#include "core/time.hpp"
#include "model/json_reader.hpp"
#include "model/lease.hpp"
#include "model/node.hpp"
#include "model/pdb.hpp"
#include "model/pod.hpp"
#include "model/quantity.hpp"
#include "model/selector.hpp"
#include "model/volume.hpp"
#include "model/workload.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

[[noreturn]] void invariant_broken(const char* what, std::string_view input) {
  std::fprintf(stderr, "fuzz invariant broken: %s (input %zu bytes)\n", what, input.size());
  std::abort();
}

}  // namespace

int fuzz_one_input(const uint8_t* data, size_t size) {
  using namespace spotshift;
  using namespace spotshift::model;
  std::string_view text(reinterpret_cast<const char*>(data), size);

  // Every kind is read straight from the text by JsonReader, which never throws, reads past the
  // end or recurses without bound; a pod that decodes compares equal to itself decoded again.
  auto direct = decode_pod(text);
  if (direct) {
    auto again = decode_pod(text);
    if (!again || !(*direct == *again)) invariant_broken("a pod decodes differently twice", text);
  }
  JsonReader reader(text);
  reader.skip();
  (void)reader.finish();
  (void)decode_node(text);
  (void)decode_pdb(text);
  (void)decode_pvc(text);
  (void)decode_pv(text);
  (void)decode_workload_controller(text, "Job");
  if (auto lease = decode_lease(text)) {
    auto back = decode_lease(std::string_view(encode_lease(*lease)));
    if (!back || back->spec.holder_identity != lease->spec.holder_identity || back->spec.lease_transitions != lease->spec.lease_transitions)
      invariant_broken("lease round trip", text);
  }

  if (size > 4096) return 0;  // the string parsers below see short inputs in practice
  if (auto q = Quantity::parse(text)) {
    auto back = Quantity::parse(q->to_string());
    if (!back || !(*back == *q)) invariant_broken("quantity round trip", text);
  }
  if (auto sel = LabelSelector::parse(text)) {
    auto back = LabelSelector::parse(sel->to_string());
    if (!back || !(*back == *sel)) invariant_broken("label selector round trip", text);
  }
  if (auto fs = FieldSelector::parse(text)) {
    auto back = FieldSelector::parse(fs->to_string());
    if (!back || !(back->requirements() == fs->requirements())) invariant_broken("field selector round trip", text);
  }
  (void)parse_time(text);
  if (auto d = parse_go_duration(text)) {
    auto back = parse_go_duration(format_go_duration(*d));
    if (!back || *back != *d) invariant_broken("duration round trip", text);
  }
  return 0;
}
