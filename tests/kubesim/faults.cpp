#include "faults.hpp"

#include "json_util.hpp"

namespace spotshift::kubesim {

Result<FaultRule> FaultRule::from_json(std::string_view json) {
  Doc d;
  if (auto r = parse_json(json, d); !r) return r.error();
  if (!d.IsObject()) return Error::invalid("a fault rule must be a JSON object");
  FaultRule f;
  f.verb = std::string(json_string(d, {"verb"}, "*"));
  f.resource = std::string(json_string(d, {"resource"}, "*"));
  f.name = std::string(json_string(d, {"name"}));
  f.user_agent = std::string(json_string(d, {"userAgent"}));
  f.status = static_cast<int>(json_int(d, {"status"}).value_or(0));
  f.retry_after_seconds = static_cast<int>(json_int(d, {"retryAfterSeconds"}).value_or(-1));
  f.delay_ms = static_cast<int>(json_int(d, {"delayMs"}).value_or(0));
  f.reset = json_bool(d, {"reset"});
  f.watch_drop_after_events = static_cast<int>(json_int(d, {"watchDropAfterEvents"}).value_or(-1));
  f.watch_drop_after_ms = static_cast<int>(json_int(d, {"watchDropAfterMs"}).value_or(-1));
  f.count = static_cast<int>(json_int(d, {"count"}).value_or(-1));
  if (const Value* p = json_member(d, "probability"); p && p->IsNumber()) f.probability = p->GetDouble();
  return f;
}

FaultRule FaultRule::answer(std::string verb, std::string resource, int status, int count) {
  FaultRule f;
  f.verb = std::move(verb);
  f.resource = std::move(resource);
  f.status = status;
  f.count = count;
  return f;
}

void Faults::add(FaultRule rule) {
  std::lock_guard lock(mutex_);
  rules_.push_back(std::move(rule));
}

void Faults::clear() {
  std::lock_guard lock(mutex_);
  rules_.clear();
  watch_expiry_.clear();
  continue_expiry_ = false;
  conflicts_.clear();
  eviction_refusals_.clear();
}

size_t Faults::rules() const {
  std::lock_guard lock(mutex_);
  return rules_.size();
}

std::optional<FaultRule> Faults::match(std::string_view verb, std::string_view resource, std::string_view name,
                                       std::string_view user_agent) {
  std::lock_guard lock(mutex_);
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    if (it->verb != "*" && it->verb != verb) continue;
    if (it->resource != "*" && it->resource != resource) continue;
    if (!it->name.empty() && it->name != name) continue;
    if (!it->user_agent.empty() && user_agent.find(it->user_agent) == std::string_view::npos) continue;
    if (it->probability < 1.0 && std::uniform_real_distribution<double>(0, 1)(rng_) >= it->probability) continue;
    FaultRule hit = *it;
    if (it->count > 0 && --it->count == 0) rules_.erase(it);
    return hit;
  }
  return std::nullopt;
}

void Faults::expire_next_watch(std::string resource) {
  std::lock_guard lock(mutex_);
  watch_expiry_.insert(std::move(resource));
}

bool Faults::take_watch_expiry(std::string_view resource) {
  std::lock_guard lock(mutex_);
  for (auto key : {resource, std::string_view("*")}) {
    auto it = watch_expiry_.find(key);
    if (it != watch_expiry_.end()) {
      watch_expiry_.erase(it);
      return true;
    }
  }
  return false;
}

void Faults::expire_next_continue() {
  std::lock_guard lock(mutex_);
  continue_expiry_ = true;
}

bool Faults::take_continue_expiry() {
  std::lock_guard lock(mutex_);
  return std::exchange(continue_expiry_, false);
}

void Faults::conflict_next_update(std::string resource, std::string key) {
  std::lock_guard lock(mutex_);
  conflicts_.insert(resource + "|" + key);
}

bool Faults::take_conflict(std::string_view resource, std::string_view key) {
  std::lock_guard lock(mutex_);
  std::string k = std::string(resource) + "|" + std::string(key);
  auto it = conflicts_.find(k);
  if (it == conflicts_.end()) return false;
  conflicts_.erase(it);
  return true;
}

void Faults::refuse_evictions(std::string key, int times) {
  std::lock_guard lock(mutex_);
  eviction_refusals_[std::move(key)] = times;
}

bool Faults::take_eviction_refusal(std::string_view key) {
  std::lock_guard lock(mutex_);
  auto it = eviction_refusals_.find(key);
  if (it == eviction_refusals_.end() || it->second <= 0) return false;
  if (--it->second == 0) eviction_refusals_.erase(it);
  return true;
}

}  // namespace spotshift::kubesim
