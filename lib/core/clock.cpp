#include "core/clock.hpp"

#include <vector>

namespace spotshift {

SystemClock& SystemClock::instance() {
  static SystemClock clock;
  return clock;
}

ManualClock::ManualClock(Time start) : now_(start) {}

Time ManualClock::now() const {
  std::lock_guard lock(mutex_);
  return now_;
}

void ManualClock::set(Time t) {
  {
    std::lock_guard lock(mutex_);
    now_ = t;
  }
  notify(t);
}

void ManualClock::advance(Duration d) {
  Time t;
  {
    std::lock_guard lock(mutex_);
    now_ += std::chrono::duration_cast<Time::duration>(d);
    t = now_;
  }
  notify(t);
}

int ManualClock::subscribe(Observer observer) {
  std::lock_guard lock(mutex_);
  int id = next_id_++;
  observers_.emplace(id, std::move(observer));
  return id;
}

void ManualClock::unsubscribe(int id) {
  std::lock_guard lock(mutex_);
  observers_.erase(id);
}

void ManualClock::notify(Time t) {
  // Copy so an observer may unsubscribe (or subscribe) from inside its callback.
  std::vector<Observer> copy;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, o] : observers_) copy.push_back(o);
  }
  for (auto& o : copy) o(t);
}

}  // namespace spotshift
