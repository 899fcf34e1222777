#include "protobuf.hpp"

#include "core/strings.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace spotshift::kubesim {

bool ProtoReader::next(uint32_t& field, uint32_t& wire) {
  uint64_t tag;
  if (!varint(tag)) return false;
  field = static_cast<uint32_t>(tag >> 3);
  wire = static_cast<uint32_t>(tag & 7);
  return true;
}

bool ProtoReader::varint(uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size()) return false;
    uint8_t b = static_cast<uint8_t>(data_[pos_++]);
    out |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

bool ProtoReader::bytes(std::string_view& out) {
  uint64_t n;
  if (!varint(n) || n > data_.size() - pos_) return false;
  out = data_.substr(pos_, n);
  pos_ += n;
  return true;
}

bool ProtoReader::skip(uint32_t wire) {
  uint64_t v;
  std::string_view s;
  switch (wire) {
    case 0:
      return varint(v);
    case 1:
      return advance(8);
    case 2:
      return bytes(s);
    case 5:
      return advance(4);
    default:
      return false;
  }
}

bool ProtoReader::advance(size_t n) {
  if (n > data_.size() - pos_) return false;
  pos_ += n;
  return true;
}

bool unwrap_protobuf(std::string_view body, ProtoEnvelope& out) {
  static constexpr std::string_view kMagic("k8s\0", 4);
  if (!body.starts_with(kMagic)) return false;
  // runtime.Unknown: typeMeta 1 (apiVersion 1, kind 2), raw 2.
  return each_bytes_field(body.substr(4), [&](uint32_t field, std::string_view v) {
    if (field == 2) out.raw = v;
    if (field == 1)
      each_bytes_field(v, [&](uint32_t f, std::string_view s) {
        if (f == 1 || f == 2) (f == 1 ? out.api_version : out.kind) = std::string(s);
      });
  });
}

namespace {

// The schema: for each message, its fields by number (k8s.io/api's generated.proto) with their
// JSON names and how they read.
enum class Type : uint8_t {
  kString,
  kInt,  // int32 or int64: a varint
  kBool,
  kMessage,
  kIntOrString,  // intstr.IntOrString: {type 1, intVal 2, strVal 3}
  kStringMap,    // map<string, string>
  kBytesMap,     // map<string, bytes>, base64 strings in JSON
  kQuantityMap,  // map<string, resource.Quantity>; a Quantity is {string 1}, a string in JSON
  kServerSet,    // creationTimestamp, managedFields, status and the like: not read on a create
};

struct Message;
using MessageRef = const Message& (*)();

struct Field {
  uint32_t number;
  std::string_view json;
  Type type;
  bool repeated = false;
  // A pointer in the Go type: kept when zero or empty (replicas: 0, minAvailable: 0). Other
  // fields' zero values are left out, as their JSON omits them.
  bool pointer = false;
  MessageRef message = nullptr;
};

struct Message {
  std::string_view name;
  std::vector<Field> fields;
  const Field* find(uint32_t number) const {
    for (const Field& f : fields)
      if (f.number == number) return &f;
    return nullptr;
  }
};

constexpr Type S = Type::kString;

Field str_f(uint32_t n, std::string_view j) { return {n, j, S}; }
Field strs_f(uint32_t n, std::string_view j) { return {n, j, S, true}; }
Field int_f(uint32_t n, std::string_view j, bool pointer = false) { return {n, j, Type::kInt, false, pointer}; }
Field bool_f(uint32_t n, std::string_view j, bool pointer = false) { return {n, j, Type::kBool, false, pointer}; }
Field msg_f(uint32_t n, std::string_view j, MessageRef m, bool pointer = false) { return {n, j, Type::kMessage, false, pointer, m}; }
Field msgs_f(uint32_t n, std::string_view j, MessageRef m) { return {n, j, Type::kMessage, true, false, m}; }
Field of_type(uint32_t n, std::string_view j, Type t, bool pointer = false) { return {n, j, t, false, pointer}; }

const Message& owner_reference() {
  static const Message m{"OwnerReference",
                         {str_f(5, "apiVersion"), str_f(1, "kind"), str_f(3, "name"), str_f(4, "uid"), bool_f(6, "controller", true),
                          bool_f(7, "blockOwnerDeletion", true)}};
  return m;
}

const Message& object_meta() {
  static const Message m{
      "ObjectMeta",
      {str_f(1, "name"), str_f(2, "generateName"), str_f(3, "namespace"), str_f(4, "selfLink"), str_f(5, "uid"),
       str_f(6, "resourceVersion"), int_f(7, "generation"), of_type(8, "creationTimestamp", Type::kServerSet),
       of_type(9, "deletionTimestamp", Type::kServerSet), int_f(10, "deletionGracePeriodSeconds", true),
       of_type(11, "labels", Type::kStringMap), of_type(12, "annotations", Type::kStringMap),
       msgs_f(13, "ownerReferences", owner_reference), strs_f(14, "finalizers"), of_type(17, "managedFields", Type::kServerSet)}};
  return m;
}

const Message& label_selector_requirement() {
  static const Message m{"LabelSelectorRequirement", {str_f(1, "key"), str_f(2, "operator"), strs_f(3, "values")}};
  return m;
}

const Message& label_selector() {
  static const Message m{"LabelSelector",
                         {of_type(1, "matchLabels", Type::kStringMap), msgs_f(2, "matchExpressions", label_selector_requirement)}};
  return m;
}

const Message& local_object_reference() {
  static const Message m{"LocalObjectReference", {str_f(1, "name")}};
  return m;
}

const Message& object_reference() {
  static const Message m{"ObjectReference",
                         {str_f(1, "kind"), str_f(2, "namespace"), str_f(3, "name"), str_f(4, "uid"), str_f(5, "apiVersion"),
                          str_f(6, "resourceVersion"), str_f(7, "fieldPath")}};
  return m;
}

const Message& resource_requirements() {
  static const Message m{"ResourceRequirements", {of_type(1, "limits", Type::kQuantityMap), of_type(2, "requests", Type::kQuantityMap)}};
  return m;
}

const Message& container_port() {
  static const Message m{"ContainerPort",
                         {str_f(1, "name"), int_f(2, "hostPort"), int_f(3, "containerPort"), str_f(4, "protocol"), str_f(5, "hostIP")}};
  return m;
}

const Message& env_var() {
  static const Message m{"EnvVar", {str_f(1, "name"), str_f(2, "value")}};
  return m;
}

const Message& container() {
  static const Message m{"Container",
                         {str_f(1, "name"), str_f(2, "image"), strs_f(3, "command"), strs_f(4, "args"), str_f(5, "workingDir"),
                          msgs_f(6, "ports", container_port), msgs_f(7, "env", env_var), msg_f(8, "resources", resource_requirements),
                          str_f(13, "terminationMessagePath"), str_f(14, "imagePullPolicy"), bool_f(16, "stdin"), bool_f(17, "stdinOnce"),
                          bool_f(18, "tty"), str_f(20, "terminationMessagePolicy"), str_f(24, "restartPolicy")}};
  return m;
}

const Message& toleration() {
  static const Message m{
      "Toleration", {str_f(1, "key"), str_f(2, "operator"), str_f(3, "value"), str_f(4, "effect"), int_f(5, "tolerationSeconds", true)}};
  return m;
}

const Message& pod_spec() {
  static const Message m{"PodSpec",
                         {msgs_f(2, "containers", container),
                          str_f(3, "restartPolicy"),
                          int_f(4, "terminationGracePeriodSeconds", true),
                          int_f(5, "activeDeadlineSeconds", true),
                          str_f(6, "dnsPolicy"),
                          of_type(7, "nodeSelector", Type::kStringMap),
                          str_f(8, "serviceAccountName"),
                          str_f(9, "serviceAccount"),
                          str_f(10, "nodeName"),
                          bool_f(11, "hostNetwork"),
                          bool_f(12, "hostPID"),
                          bool_f(13, "hostIPC"),
                          msgs_f(15, "imagePullSecrets", local_object_reference),
                          str_f(16, "hostname"),
                          str_f(17, "subdomain"),
                          str_f(19, "schedulerName"),
                          msgs_f(20, "initContainers", container),
                          bool_f(21, "automountServiceAccountToken", true),
                          msgs_f(22, "tolerations", toleration),
                          str_f(24, "priorityClassName"),
                          int_f(25, "priority", true),
                          bool_f(30, "enableServiceLinks", true),
                          of_type(31, "preemptionPolicy", S, true),
                          of_type(32, "overhead", Type::kQuantityMap)}};
  return m;
}

const Message& pod_template_spec() {
  static const Message m{"PodTemplateSpec", {msg_f(1, "metadata", object_meta), msg_f(2, "spec", pod_spec)}};
  return m;
}

const Message& rolling_update_deployment() {
  static const Message m{"RollingUpdateDeployment",
                         {of_type(1, "maxUnavailable", Type::kIntOrString, true), of_type(2, "maxSurge", Type::kIntOrString, true)}};
  return m;
}

const Message& deployment_strategy() {
  static const Message m{"DeploymentStrategy", {str_f(1, "type"), msg_f(2, "rollingUpdate", rolling_update_deployment, true)}};
  return m;
}

const Message& deployment_spec() {
  static const Message m{"DeploymentSpec",
                         {int_f(1, "replicas", true), msg_f(2, "selector", label_selector, true), msg_f(3, "template", pod_template_spec),
                          msg_f(4, "strategy", deployment_strategy), int_f(5, "minReadySeconds"), int_f(6, "revisionHistoryLimit", true),
                          bool_f(7, "paused"), int_f(9, "progressDeadlineSeconds", true)}};
  return m;
}

const Message& job_spec() {
  static const Message m{
      "JobSpec",
      {int_f(1, "parallelism", true), int_f(2, "completions", true), int_f(3, "activeDeadlineSeconds", true),
       msg_f(4, "selector", label_selector, true), bool_f(5, "manualSelector", true), msg_f(6, "template", pod_template_spec),
       int_f(7, "backoffLimit", true), int_f(8, "ttlSecondsAfterFinished", true), of_type(9, "completionMode", S, true),
       bool_f(10, "suspend", true), int_f(12, "backoffLimitPerIndex", true), int_f(13, "maxFailedIndexes", true),
       of_type(14, "podReplacementPolicy", S, true), of_type(15, "managedBy", S, true)}};
  return m;
}

const Message& pdb_spec() {
  static const Message m{"PodDisruptionBudgetSpec",
                         {of_type(1, "minAvailable", Type::kIntOrString, true), msg_f(2, "selector", label_selector, true),
                          of_type(3, "maxUnavailable", Type::kIntOrString, true), of_type(4, "unhealthyPodEvictionPolicy", S, true)}};
  return m;
}

const Message& service_port() {
  static const Message m{"ServicePort",
                         {str_f(1, "name"), str_f(2, "protocol"), int_f(3, "port"), of_type(4, "targetPort", Type::kIntOrString),
                          int_f(5, "nodePort"), of_type(6, "appProtocol", S, true)}};
  return m;
}

const Message& service_spec() {
  static const Message m{
      "ServiceSpec",
      {msgs_f(1, "ports", service_port), of_type(2, "selector", Type::kStringMap), str_f(3, "clusterIP"), str_f(4, "type"),
       strs_f(5, "externalIPs"), str_f(7, "sessionAffinity"), str_f(8, "loadBalancerIP"), strs_f(9, "loadBalancerSourceRanges"),
       str_f(10, "externalName"), str_f(11, "externalTrafficPolicy"), int_f(12, "healthCheckNodePort"),
       bool_f(13, "publishNotReadyAddresses"), of_type(17, "ipFamilyPolicy", S, true), strs_f(18, "clusterIPs"), strs_f(19, "ipFamilies"),
       bool_f(20, "allocateLoadBalancerNodePorts", true), of_type(21, "loadBalancerClass", S, true),
       of_type(22, "internalTrafficPolicy", S, true), of_type(23, "trafficDistribution", S, true)}};
  return m;
}

const Message& namespace_spec() {
  static const Message m{"NamespaceSpec", {strs_f(1, "finalizers")}};
  return m;
}

const Message& policy_rule() {
  static const Message m{
      "PolicyRule",
      {strs_f(1, "verbs"), strs_f(2, "apiGroups"), strs_f(3, "resources"), strs_f(4, "resourceNames"), strs_f(5, "nonResourceURLs")}};
  return m;
}

const Message& subject() {
  static const Message m{"Subject", {str_f(1, "kind"), str_f(2, "apiGroup"), str_f(3, "name"), str_f(4, "namespace")}};
  return m;
}

const Message& role_ref() {
  static const Message m{"RoleRef", {str_f(1, "apiGroup"), str_f(2, "kind"), str_f(3, "name")}};
  return m;
}

// Status is not read on a create: kept out of the schema but not refused.
Field status_f(uint32_t n) { return of_type(n, "status", Type::kServerSet); }
Field meta_f() { return msg_f(1, "metadata", object_meta); }

struct Kind {
  std::string_view group, kind;
  Message message;
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {
      {"", "Namespace", {"Namespace", {meta_f(), msg_f(2, "spec", namespace_spec), status_f(3)}}},
      {"",
       "ConfigMap",
       {"ConfigMap",
        {meta_f(), of_type(2, "data", Type::kStringMap), of_type(3, "binaryData", Type::kBytesMap), bool_f(4, "immutable", true)}}},
      {"",
       "Secret",
       {"Secret",
        {meta_f(), of_type(2, "data", Type::kBytesMap), str_f(3, "type"), of_type(4, "stringData", Type::kStringMap),
         bool_f(5, "immutable", true)}}},
      {"",
       "ServiceAccount",
       {"ServiceAccount",
        {meta_f(), msgs_f(2, "secrets", object_reference), msgs_f(3, "imagePullSecrets", local_object_reference),
         bool_f(4, "automountServiceAccountToken", true)}}},
      {"", "Service", {"Service", {meta_f(), msg_f(2, "spec", service_spec), status_f(3)}}},
      {"", "Pod", {"Pod", {meta_f(), msg_f(2, "spec", pod_spec), status_f(3)}}},
      {"apps", "Deployment", {"Deployment", {meta_f(), msg_f(2, "spec", deployment_spec), status_f(3)}}},
      {"batch", "Job", {"Job", {meta_f(), msg_f(2, "spec", job_spec), status_f(3)}}},
      {"policy", "PodDisruptionBudget", {"PodDisruptionBudget", {meta_f(), msg_f(2, "spec", pdb_spec), status_f(3)}}},
      {"rbac.authorization.k8s.io", "Role", {"Role", {meta_f(), msgs_f(2, "rules", policy_rule)}}},
      {"rbac.authorization.k8s.io", "ClusterRole", {"ClusterRole", {meta_f(), msgs_f(2, "rules", policy_rule)}}},
      {"rbac.authorization.k8s.io",
       "RoleBinding",
       {"RoleBinding", {meta_f(), msgs_f(2, "subjects", subject), msg_f(3, "roleRef", role_ref)}}},
      {"rbac.authorization.k8s.io",
       "ClusterRoleBinding",
       {"ClusterRoleBinding", {meta_f(), msgs_f(2, "subjects", subject), msg_f(3, "roleRef", role_ref)}}},
      {"scheduling.k8s.io",
       "PriorityClass",
       {"PriorityClass",
        {meta_f(), int_f(2, "value"), bool_f(3, "globalDefault"), str_f(4, "description"), of_type(5, "preemptionPolicy", S, true)}}},
  };
  return k;
}

const Message* message_of(std::string_view group, std::string_view kind) {
  for (const Kind& k : kinds())
    if (k.group == group && k.kind == kind) return &k.message;
  return nullptr;
}

// Decodes messages by the schema into JSON; the first problem found is kept.
class Decoder {
 public:
  explicit Decoder(Alloc& a) : a_(a) {}
  std::string unknown;  // "field 18 of PodSpec (at spec.template.spec)"
  bool malformed = false;

  bool message(std::string_view data, const Message& m, Value& out, const std::string& at) {
    ProtoReader r(data);
    uint32_t number, wire;
    while (!r.done()) {
      if (!r.next(number, wire)) return fail();
      const Field* f = m.find(number);
      if (!f) {
        unknown = fmt::format("field {} of {}{}", number, m.name, at.empty() ? "" : fmt::format(" (at {})", at));
        return false;
      }
      if (f->type == Type::kServerSet) {
        if (!r.skip(wire)) return fail();
        continue;
      }
      Value v;
      if (wire == 0) {
        uint64_t n;
        if (!r.varint(n)) return fail();
        if (f->type == Type::kInt) {
          // int32 and int64 alike: negative values are sent as 64-bit two's complement.
          if (n == 0 && !f->pointer) continue;
          v.SetInt64(static_cast<int64_t>(n));
        } else if (f->type == Type::kBool) {
          if (n == 0 && !f->pointer) continue;
          v.SetBool(n != 0);
        } else {
          return fail();
        }
      } else if (wire == 2) {
        std::string_view s;
        if (!r.bytes(s)) return fail();
        if (f->type == Type::kStringMap || f->type == Type::kBytesMap || f->type == Type::kQuantityMap) {
          if (!map_entry(s, f->type, ensure_object(out, f->json, a_))) return false;
          continue;
        }
        if (!value(s, *f, v, at)) return false;
        if (v.IsNull()) continue;
      } else {
        return fail();
      }
      if (f->repeated) ensure_array(out, f->json, a_).PushBack(v, a_);
      else set(out, f->json, std::move(v), a_);
    }
    return true;
  }

 private:
  bool fail() {
    malformed = true;
    return false;
  }

  // A length-delimited value of field f, of the message at `at`, into v; v stays null when the
  // value is to be left out.
  bool value(std::string_view s, const Field& f, Value& v, const std::string& at) {
    switch (f.type) {
      case Type::kString:
        if (!s.empty() || f.pointer || f.repeated) v = str(s, a_);
        return true;
      case Type::kIntOrString:
        return int_or_string(s, v);
      case Type::kMessage: {
        Value obj(rapidjson::kObjectType);
        if (!message(s, f.message(), obj, at.empty() ? std::string(f.json) : fmt::format("{}.{}", at, f.json))) return false;
        if (obj.MemberCount() || f.pointer || f.repeated) v = std::move(obj);
        return true;
      }
      default:
        return fail();
    }
  }

  bool quantity(std::string_view s, Value& v) {
    std::string text;
    if (!each_bytes_field(s, [&](uint32_t f, std::string_view q) {
          if (f == 1) text = std::string(q);
        }))
      return fail();
    v = str(text, a_);
    return true;
  }

  bool int_or_string(std::string_view s, Value& v) {
    ProtoReader r(s);
    uint32_t number, wire;
    uint64_t type = 0, int_val = 0;
    std::string_view str_val;
    while (!r.done()) {
      if (!r.next(number, wire)) return fail();
      if (number == 1 && wire == 0) {
        if (!r.varint(type)) return fail();
      } else if (number == 2 && wire == 0) {
        if (!r.varint(int_val)) return fail();
      } else if (number == 3 && wire == 2) {
        if (!r.bytes(str_val)) return fail();
      } else if (!r.skip(wire)) {
        return fail();
      }
    }
    if (type == 1) v = str(str_val, a_);
    else v.SetInt64(static_cast<int32_t>(static_cast<uint32_t>(int_val)));
    return true;
  }

  // One entry (key 1, value 2) of a map field into `into`.
  bool map_entry(std::string_view entry, Type type, Value& into) {
    std::string key;
    Value v = str("", a_);
    bool ok = true;
    if (!each_bytes_field(entry,
                          [&](uint32_t f, std::string_view s) {
                            if (f == 1) key = std::string(s);
                            else if (f == 2 && type == Type::kStringMap) v = str(s, a_);
                            else if (f == 2 && type == Type::kBytesMap) v = str(base64_encode(s), a_);
                            else if (f == 2) ok = quantity(s, v) && ok;
                          }) ||
        !ok)
      return fail();
    set(into, key, std::move(v), a_);
    return true;
  }

  Alloc& a_;
};

}  // namespace

bool protobuf_kind_known(std::string_view group, std::string_view kind) { return message_of(group, kind) != nullptr; }

Result<Doc> decode_object_protobuf(std::string_view body, std::string_view group, std::string_view kind) {
  auto bad = [&] { return Error::api(400, "BadRequest", fmt::format("the request body is not a valid protobuf {}", kind)); };
  const Message* m = message_of(group, kind);
  if (!m)
    return Error::api(415, "UnsupportedMediaType",
                      fmt::format("kubesim does not read a {} sent as protobuf: send JSON (kubectl create -f)", kind));
  ProtoEnvelope envelope;
  if (!unwrap_protobuf(body, envelope)) return bad();
  if (!envelope.kind.empty() && envelope.kind != kind)
    return Error::api(400, "BadRequest", fmt::format("the protobuf body is a {}, not a {}", envelope.kind, kind));
  Doc d(rapidjson::kObjectType);
  auto& a = d.GetAllocator();
  const std::string api_version = !envelope.api_version.empty() ? envelope.api_version : group.empty() ? "v1" : fmt::format("{}/v1", group);
  set_str(d, "apiVersion", api_version, a);
  set_str(d, "kind", kind, a);
  Decoder decoder(a);
  if (!decoder.message(envelope.raw, *m, d, "")) {
    if (decoder.malformed) return bad();
    return Error::api(
        415, "UnsupportedMediaType",
        fmt::format("kubesim does not read {} of a {} sent as protobuf: send JSON (kubectl create -f)", decoder.unknown, kind));
  }
  return d;
}

}  // namespace spotshift::kubesim
