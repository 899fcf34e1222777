#pragma once
// A ResourceList as the scheduler reads it: cpu in milli-units, everything else in whole units
// (bytes for memory, storage and hugepages; counts for pods and extended resources).

#include "model/intern.hpp"
#include "model/quantity.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spotshift::model {

inline constexpr std::string_view kResourceCpu = "cpu";
inline constexpr std::string_view kResourceMemory = "memory";
inline constexpr std::string_view kResourceEphemeralStorage = "ephemeral-storage";
inline constexpr std::string_view kResourcePods = "pods";

// a + sign * b (sign 1 or -1), held at the int64 limits instead of overflowing. Quantities
// saturate there (Quantity::milli_value), so sums of them must too: a pod asking for more than
// int64 can hold, plus another container, is still "too much", never a wrapped-around negative.
inline int64_t saturating_add(int64_t a, int64_t b, int sign = 1) {
  int64_t out;
  if (!(sign < 0 ? __builtin_sub_overflow(a, b, &out) : __builtin_add_overflow(a, b, &out))) return out;
  return (sign > 0) == (b > 0) ? INT64_MAX : INT64_MIN;
}

class ResourceList {
 public:
  int64_t cpu_milli = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int64_t pods = 0;

  // hugepages-*, and extended resources such as nvidia.com/gpu; sorted by name, no zero entries
  // are required but they may appear.
  using Scalar = std::pair<InternedString, int64_t>;

  // The value of a resource by its Kubernetes name ("cpu" in milli-units).
  int64_t get(std::string_view name) const;
  // The value of an extended resource or hugepages, by its interned name (no string compared).
  int64_t scalar(const InternedString& name) const {
    for (const auto& [n, v] : scalars_)
      if (n == name) return v;
    return 0;
  }
  void set(std::string_view name, int64_t value);
  // A resource from its quantity: cpu in milli-units, anything else in units.
  void set(std::string_view name, const Quantity& q);
  const std::vector<Scalar>& scalars() const { return scalars_; }

  // Adds (sign -1: subtracts) other, each sum held at the int64 limits.
  void add(const ResourceList& other, int sign = 1);
  void subtract(const ResourceList& other);
  // Per resource: this = max(this, other).
  void max_with(const ResourceList& other);
  bool is_zero() const;

  // Calls f(name, value) for cpu, memory, ephemeral-storage, pods (when non-zero) and each scalar.
  template <class F>
  void for_each(F&& f) const {
    if (cpu_milli) f(kResourceCpu, cpu_milli);
    if (memory) f(kResourceMemory, memory);
    if (ephemeral_storage) f(kResourceEphemeralStorage, ephemeral_storage);
    if (pods) f(kResourcePods, pods);
    for (const auto& [name, value] : scalars_)
      if (value) f(name.view(), value);
  }

  // "cpu=500m,memory=128Mi" style summary for logs and explanations.
  std::string to_string() const;

  bool operator==(const ResourceList&) const = default;

 private:
  int64_t* scalar_slot(std::string_view name);
  std::vector<Scalar> scalars_;
};

// Whether a name is a resource the scheduler accounts for beyond the four fixed ones.
bool is_scalar_resource_name(std::string_view name);

}  // namespace spotshift::model
