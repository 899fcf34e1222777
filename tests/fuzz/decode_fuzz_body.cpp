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

  // Pods are read straight from the text by JsonReader; a document takes the same decoder
  // through the text RapidJSON writes back, and the two must agree.
  auto direct = decode_pod(text);
  JsonReader reader(text);
  reader.skip();
  (void)reader.finish();

  JsonDocument doc;
  if (parse_json(text, doc)) {
    (void)decode_node(doc);
    auto via_document = decode_pod(doc);
    // Only one way: RapidJSON accepts some text the reader refuses (it takes a NUL byte for the
    // end of the text, and let a stray byte before the value through).
    if (direct && (!via_document || !(*direct == *via_document)))
      invariant_broken("a pod decodes differently from its text and from a document", text);
    (void)decode_pdb(doc);
    if (auto lease = decode_lease(doc)) {
      JsonDocument again;
      if (!parse_json(encode_lease(*lease), again)) invariant_broken("encoded lease is not JSON", text);
      auto back = decode_lease(again);
      if (!back || back->spec.holder_identity != lease->spec.holder_identity ||
          back->spec.lease_transitions != lease->spec.lease_transitions)
        invariant_broken("lease round trip", text);
    }
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
