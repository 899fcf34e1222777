#include "sim_clock.hpp"

namespace spotshift::kubesim {

using namespace std::chrono;

SimClock::SimClock(double scale) : scale_(scale), sim_base_(system_clock::now()), real_base_(steady_clock::now()) {}

Time SimClock::now_locked() const {
  auto real = steady_clock::now() - real_base_;
  return sim_base_ + duration_cast<Time::duration>(duration<double, std::nano>(double(real.count()) * scale_));
}

Time SimClock::now() const {
  std::lock_guard lock(mutex_);
  return now_locked();
}

double SimClock::scale() const {
  std::lock_guard lock(mutex_);
  return scale_;
}

void SimClock::set_scale(double scale) {
  std::lock_guard lock(mutex_);
  sim_base_ = now_locked();
  real_base_ = steady_clock::now();
  scale_ = scale > 0 ? scale : 1.0;
}

void SimClock::advance(Duration d) {
  std::lock_guard lock(mutex_);
  sim_base_ += duration_cast<Time::duration>(d);
}

nanoseconds SimClock::real_until(Time t) const {
  std::lock_guard lock(mutex_);
  auto sim = t - now_locked();
  if (sim <= Time::duration::zero()) return nanoseconds::zero();
  return nanoseconds(static_cast<int64_t>(double(duration_cast<nanoseconds>(sim).count()) / scale_));
}

Duration SimClock::to_sim(nanoseconds real) const {
  std::lock_guard lock(mutex_);
  return Duration(static_cast<int64_t>(double(real.count()) * scale_));
}

}  // namespace spotshift::kubesim
