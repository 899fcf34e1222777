#pragma once
// Kubernetes resource quantities with exact arithmetic.
//
// A Quantity is held as a signed 128-bit count of nano-units, which represents every value with
// up to 9 fractional digits exactly and magnitudes up to about 1.7e29. Parsing follows
// apimachinery: values finer than 1n round up (away from zero), BinarySI values are capped at
// 2^63-1, and the canonical string keeps the suffix family the value was written in.

#include "core/error.hpp"

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace spotshift::model {

class Quantity {
 public:
  enum class Format : uint8_t { kDecimalSI, kBinarySI, kDecimalExponent };

  Quantity() = default;

  // Errors name the string: quantity "12x": unable to parse quantity's suffix.
  static Result<Quantity> parse(std::string_view text);
  static Quantity from_milli(int64_t milli, Format format = Format::kDecimalSI);
  static Quantity from_int(int64_t value, Format format = Format::kDecimalSI);

  // Rounded up to a whole milli-unit or unit, saturating at the int64 limits; this is how the
  // scheduler reads cpu (milli) and every other resource (units).
  int64_t milli_value() const;
  int64_t value() const;

  // Canonical form: "100m", "1500m", "512Mi", "1536", "12e6", "0".
  std::string to_string() const;

  Format format() const { return format_; }
  bool is_zero() const { return nanos_ == 0; }
  int sign() const { return nanos_ > 0 ? 1 : nanos_ < 0 ? -1 : 0; }

  // Sums keep the left operand's format (a zero takes the other's), saturating on overflow.
  Quantity& operator+=(const Quantity& other);
  Quantity& operator-=(const Quantity& other);
  friend Quantity operator+(Quantity a, const Quantity& b) { return a += b; }
  friend Quantity operator-(Quantity a, const Quantity& b) { return a -= b; }

  // Comparison is by value; 1Ki == 1024 even though their strings differ.
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    return a.nanos_ < b.nanos_   ? std::strong_ordering::less
           : a.nanos_ > b.nanos_ ? std::strong_ordering::greater
                                 : std::strong_ordering::equal;
  }

 private:
  __int128 nanos_ = 0;
  Format format_ = Format::kDecimalSI;
};

}  // namespace spotshift::model
