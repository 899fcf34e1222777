#include "model/resources.hpp"

#include "model/quantity.hpp"

#include <algorithm>

namespace spotshift::model {

int64_t ResourceList::get(std::string_view name) const {
  if (name == kResourceCpu) return cpu_milli;
  if (name == kResourceMemory) return memory;
  if (name == kResourceEphemeralStorage) return ephemeral_storage;
  if (name == kResourcePods) return pods;
  for (const auto& [n, v] : scalars_)
    if (n.view() == name) return v;
  return 0;
}

int64_t* ResourceList::scalar_slot(std::string_view name) {
  auto it =
      std::lower_bound(scalars_.begin(), scalars_.end(), name, [](const Scalar& s, std::string_view n) { return s.first.view() < n; });
  if (it == scalars_.end() || it->first.view() != name) it = scalars_.insert(it, Scalar{InternedString(name), 0});
  return &it->second;
}

void ResourceList::set(std::string_view name, const Quantity& q) { set(name, name == kResourceCpu ? q.milli_value() : q.value()); }

void ResourceList::set(std::string_view name, int64_t value) {
  if (name == kResourceCpu) cpu_milli = value;
  else if (name == kResourceMemory) memory = value;
  else if (name == kResourceEphemeralStorage) ephemeral_storage = value;
  else if (name == kResourcePods) pods = value;
  else *scalar_slot(name) = value;
}

void ResourceList::add(const ResourceList& other, int sign) {
  cpu_milli = saturating_add(cpu_milli, other.cpu_milli, sign);
  memory = saturating_add(memory, other.memory, sign);
  ephemeral_storage = saturating_add(ephemeral_storage, other.ephemeral_storage, sign);
  pods = saturating_add(pods, other.pods, sign);
  for (const auto& [n, v] : other.scalars_) {
    int64_t* slot = scalar_slot(n.view());
    *slot = saturating_add(*slot, v, sign);
  }
}

void ResourceList::subtract(const ResourceList& other) { add(other, -1); }

void ResourceList::max_with(const ResourceList& other) {
  cpu_milli = std::max(cpu_milli, other.cpu_milli);
  memory = std::max(memory, other.memory);
  ephemeral_storage = std::max(ephemeral_storage, other.ephemeral_storage);
  pods = std::max(pods, other.pods);
  for (const auto& [n, v] : other.scalars_) {
    int64_t* slot = scalar_slot(n.view());
    *slot = std::max(*slot, v);
  }
}

bool ResourceList::is_zero() const {
  if (cpu_milli || memory || ephemeral_storage || pods) return false;
  return std::all_of(scalars_.begin(), scalars_.end(), [](const Scalar& s) { return s.second == 0; });
}

std::string ResourceList::to_string() const {
  std::string out;
  for_each([&](std::string_view name, int64_t value) {
    if (!out.empty()) out += ',';
    out += name;
    out += '=';
    if (name == kResourceCpu) {
      out += Quantity::from_milli(value).to_string();
    } else {
      bool binary = name == kResourceMemory || name == kResourceEphemeralStorage || name.starts_with("hugepages-");
      out += Quantity::from_int(value, binary ? Quantity::Format::kBinarySI : Quantity::Format::kDecimalSI).to_string();
    }
  });
  return out;
}

bool is_scalar_resource_name(std::string_view name) {
  return name != kResourceCpu && name != kResourceMemory && name != kResourceEphemeralStorage && name != kResourcePods;
}

}  // namespace spotshift::model
