#include "model/lease.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace spotshift::model {

Result<Lease> decode_lease(const JsonValue& v) {
  JsonDecoder d("lease");
  Lease l;
  if (!v.IsObject()) {
    d.wrong_type("an object", v);
    return d.take_error();
  }
  decode_meta(d, v, l.meta, [](std::string_view, std::string_view) {});
  if (const JsonValue* spec = d.object(v, "spec")) {
    auto s = d.field("spec");
    l.spec.holder_identity = std::string(d.string(*spec, "holderIdentity"));
    if (auto dur = d.optional_integer(*spec, "leaseDurationSeconds")) l.spec.lease_duration_seconds = int32_t(*dur);
    l.spec.acquire_time = d.time(*spec, "acquireTime");
    l.spec.renew_time = d.time(*spec, "renewTime");
    l.spec.lease_transitions = static_cast<int32_t>(d.integer(*spec, "leaseTransitions"));
  }
  if (!d.ok()) return d.take_error();
  return l;
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
