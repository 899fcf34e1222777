#pragma once
// Request bodies kubectl sends as protobuf: the envelope ("k8s\0" + runtime.Unknown) and the
// built-in objects its create commands send (kubectl create deployment, job, poddisruptionbudget,
// service, serviceaccount, role, rolebinding, ...), decoded to the JSON objects they stand for.

#include "core/error.hpp"
#include "json_util.hpp"

#include <cstdint>
#include <string_view>

namespace spotshift::kubesim {

// A minimal protobuf reader: tags, varints and length-delimited fields; other wire types are
// skipped by size.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }
  bool next(uint32_t& field, uint32_t& wire);
  bool varint(uint64_t& out);
  bool bytes(std::string_view& out);
  bool skip(uint32_t wire);

 private:
  bool advance(size_t n);
  std::string_view data_;
  size_t pos_ = 0;
};

// Calls on(field, bytes) for each length-delimited field of a message and skips the others;
// false when the message is malformed.
template <class F>
bool each_bytes_field(std::string_view msg, F&& on) {
  ProtoReader r(msg);
  uint32_t field, wire;
  while (!r.done()) {
    std::string_view v;
    if (!r.next(field, wire)) return false;
    if (wire != 2) {
      if (!r.skip(wire)) return false;
      continue;
    }
    if (!r.bytes(v)) return false;
    on(field, v);
  }
  return true;
}

// The envelope's parts: runtime.Unknown's typeMeta (apiVersion, kind) and raw object.
struct ProtoEnvelope {
  std::string api_version, kind;
  std::string_view raw;
};
// False when the body is not "k8s\0" followed by a runtime.Unknown.
bool unwrap_protobuf(std::string_view body, ProtoEnvelope& out);

// Whether decode_object_protobuf knows the kind of the group ("" for the core group).
bool protobuf_kind_known(std::string_view group, std::string_view kind);

// The object of `kind` in the envelope, as JSON: every field kubectl's create commands set, in
// its JSON name; zero values of fields that are not pointers in the Go type are left out, as
// their JSON omits them. A field kubesim does not know is refused (415, naming it) rather than
// dropped; a malformed body is 400.
Result<Doc> decode_object_protobuf(std::string_view body, std::string_view group, std::string_view kind);

}  // namespace spotshift::kubesim
