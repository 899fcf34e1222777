#include "model/lease.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace spotshift::model {

Result<Lease> decode_lease(JsonReader& r) {
  JsonDecoder d("lease");
  Lease l;
  auto spec = [&](std::string_view key) {
    if (key == "holderIdentity") l.spec.holder_identity = std::string(d.string(r));
    else if (key == "leaseDurationSeconds") {
      if (auto dur = d.optional_integer(r)) l.spec.lease_duration_seconds = int32_t(*dur);
    } else if (key == "acquireTime") l.spec.acquire_time = d.time(r);
    else if (key == "renewTime") l.spec.renew_time = d.time(r);
    else if (key == "leaseTransitions") l.spec.lease_transitions = static_cast<int32_t>(d.integer(r));
    else return false;
    return true;
  };
  auto done = decode_object(d, r, l.meta, [&](std::string_view key) {
    if (key != "spec") return false;
    d.members(r, spec);
    return true;
  });
  if (!done) return done.error();
  return l;
}

Result<Lease> decode_lease(std::string_view json) {
  return decode_whole("lease", json, [](JsonReader& r) { return decode_lease(r); });
}

std::string encode_lease(const Lease& lease) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("apiVersion");
  w.String("coordination.k8s.io/v1");
  w.Key("kind");
  w.String("Lease");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  w.String(lease.meta.name);
  if (!lease.meta.namespace_.empty()) {
    w.Key("namespace");
    w.String(lease.meta.namespace_.str());
  }
  if (!lease.meta.resource_version.empty()) {
    w.Key("resourceVersion");
    w.String(lease.meta.resource_version);
  }
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  w.Key("holderIdentity");
  w.String(lease.spec.holder_identity);
  if (lease.spec.lease_duration_seconds) {
    w.Key("leaseDurationSeconds");
    w.Int(*lease.spec.lease_duration_seconds);
  }
  if (lease.spec.acquire_time) {
    w.Key("acquireTime");
    w.String(format_micro_time(*lease.spec.acquire_time));
  }
  if (lease.spec.renew_time) {
    w.Key("renewTime");
    w.String(format_micro_time(*lease.spec.renew_time));
  }
  w.Key("leaseTransitions");
  w.Int(lease.spec.lease_transitions);
  w.EndObject();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace spotshift::model
