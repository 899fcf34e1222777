#pragma once
// Gather<T, N>: decoded values collected in place, handed over as a vector of exactly their
// number. A decoder does not know how many elements an array holds until it has read them all;
// pushing onto the vector itself allocates at every doubling (1, 2, 4, ...) and leaves unused
// capacity in objects the cache keeps. The usual few take one allocation of the right size.

#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <span>
#include <utility>
#include <vector>

namespace spotshift::model {

template <class T, size_t N>
class Gather {
 public:
  Gather() = default;
  Gather(const Gather&) = delete;
  Gather& operator=(const Gather&) = delete;
  ~Gather() {
    if (size_ <= N) std::destroy_n(in_place(), size_);  // beyond N they were moved to more_ and destroyed
  }

  void push_back(T v) {
    if (size_ < N) {
      new (in_place() + size_) T(std::move(v));
    } else {
      if (size_ == N) spill();
      more_.push_back(std::move(v));
    }
    ++size_;
  }
  // What was gathered so far, in order.
  std::span<const T> items() const { return size_ <= N ? std::span<const T>(in_place(), size_) : std::span<const T>(more_); }
  // The values, moved out into a vector of their number; the gather is left empty.
  std::vector<T> take() {
    std::vector<T> out;
    if (size_ <= N) {
      out.assign(std::make_move_iterator(in_place()), std::make_move_iterator(in_place() + size_));
      std::destroy_n(in_place(), size_);
    } else {
      out = std::move(more_);
    }
    size_ = 0;
    more_.clear();
    return out;
  }

 private:
  // The first N values live in raw storage, constructed only as they come (a default-constructed
  // array of N would cost more than the allocations it saves).
  T* in_place() { return std::launder(reinterpret_cast<T*>(storage_)); }
  const T* in_place() const { return std::launder(reinterpret_cast<const T*>(storage_)); }
  void spill() {
    more_.reserve(2 * N);
    more_.assign(std::make_move_iterator(in_place()), std::make_move_iterator(in_place() + N));
    std::destroy_n(in_place(), N);
  }

  alignas(T) std::byte storage_[N * sizeof(T)];
  std::vector<T> more_;
  size_t size_ = 0;
};

}  // namespace spotshift::model
