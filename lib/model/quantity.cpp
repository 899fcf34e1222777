#include "model/quantity.hpp"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <limits>

namespace spotshift::model {

namespace {

using i128 = __int128;

constexpr i128 kNano = 1'000'000'000;
// Keep well inside the int128 range so the canonical formatting's x10/x100 cannot overflow.
constexpr i128 kLimit = i128(1'000'000'000'000'000'000LL) * i128(1'000'000'000'000'000'000LL);  // 1e36

constexpr const char* kFormatWrong = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
constexpr const char* kNumeric = "unable to parse quantity's numeric part";
constexpr const char* kSuffix = "unable to parse quantity's suffix";
constexpr const char* kRange = "value is outside the supported range (about +-1e27)";

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string i128_to_string(i128 v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  unsigned __int128 u = negative ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  char buf[48];
  int pos = sizeof buf;
  while (u) {
    buf[--pos] = static_cast<char>('0' + int(u % 10));
    u /= 10;
  }
  if (negative) buf[--pos] = '-';
  return std::string(buf + pos, sizeof buf - pos);
}

int64_t saturate(i128 v) {
  if (v > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (v < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

i128 ceil_div(i128 n, i128 d) {  // d > 0; rounds toward +infinity
  i128 q = n / d;
  if (n % d != 0 && n > 0) ++q;
  return q;
}

i128 digits_value(std::string_view num, std::string_view denom, int exp2, long shift);

}  // namespace

Result<Quantity> Quantity::parse(std::string_view text) {
  auto fail = [&](const char* what) { return Error::invalid(fmt::format("quantity \"{}\": {}", text, what)); };
  if (text.empty()) return fail(kFormatWrong);

  size_t pos = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    pos = 1;
  }
  size_t num_begin = pos;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  std::string_view num = text.substr(num_begin, pos - num_begin);
  std::string_view denom;
  if (pos < text.size() && text[pos] == '.') {
    size_t denom_begin = ++pos;
    while (pos < text.size() && is_digit(text[pos])) ++pos;
    denom = text.substr(denom_begin, pos - denom_begin);
  }
  std::string_view suffix = text.substr(pos);

  // The suffix must look like [eEinumkKMGTP]*[-+]?[0-9]* before it is interpreted.
  size_t i = 0;
  while (i < suffix.size() && std::strchr("eEinumkKMGTP", suffix[i]) && suffix[i] != '\0') ++i;
  if (i < suffix.size() && (suffix[i] == '+' || suffix[i] == '-')) ++i;
  while (i < suffix.size() && is_digit(suffix[i])) ++i;
  if (i != suffix.size()) return fail(kFormatWrong);

  int exp10 = 0;
  int exp2 = 0;
  Format format = Format::kDecimalSI;
  if (suffix.empty()) {
  } else if (suffix.size() == 1 && std::strchr("numkMGTPE", suffix[0])) {
    static constexpr std::string_view kDecimal = "num kMGTPE";
    exp10 = (static_cast<int>(kDecimal.find(suffix[0])) - 3) * 3;
  } else if (suffix.size() == 2 && suffix[1] == 'i' && std::strchr("KMGTPE", suffix[0])) {
    static constexpr std::string_view kBinary = "KMGTPE";
    exp2 = (static_cast<int>(kBinary.find(suffix[0])) + 1) * 10;
    format = Format::kBinarySI;
  } else if ((suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1) {
    std::string_view e = suffix.substr(1);
    bool e_negative = false;
    if (e[0] == '+' || e[0] == '-') {
      e_negative = e[0] == '-';
      e = e.substr(1);
    }
    if (e.empty()) return fail(kSuffix);
    for (char c : e)
      if (!is_digit(c)) return fail(kSuffix);
    if (e.size() > 4) return fail(kRange);
    int v = 0;
    for (char c : e) v = v * 10 + (c - '0');
    exp10 = e_negative ? -v : v;
    format = Format::kDecimalExponent;
  } else {
    return fail(kSuffix);
  }

  // As in apimachinery, the suffix is judged before the number.
  if (num.empty() && denom.empty()) return fail(kNumeric);

  long shift = static_cast<long>(exp10) - static_cast<long>(denom.size()) + 9;  // D * 10^shift nanos
  i128 value = 0;
  if (num.size() + denom.size() <= 12 && shift >= 0) {
    // Up to 12 digits and nothing finer than 1n ("2", "500m", "0.5", "2048Mi": nearly every
    // request): D * 2^exp2 stays below 2^101, so int128 arithmetic is exact, nothing rounds.
    for (char c : num) value = value * 10 + (c - '0');
    for (char c : denom) value = value * 10 + (c - '0');
    value <<= exp2;
  } else {
    value = digits_value(num, denom, exp2, shift);
    if (value < 0) return fail(kRange);
  }
  if (value != 0) {
    for (long s = 0; s < shift; ++s) {
      value *= 10;
      if (value > kLimit) return fail(kRange);
    }
  }
  if (format == Format::kBinarySI) {
    const i128 max = i128(std::numeric_limits<int64_t>::max()) * kNano;
    if (value > max) value = max;
  }
  Quantity q;
  q.nanos_ = negative ? -value : value;
  q.format_ = format;
  return q;
}

namespace {

// The exact value is D * 2^exp2 * 10^(exp10 - len(denom)), D being the digits of num and denom.
// Builds D as a decimal digit string, multiplies it by 2^exp2 digit-wise, then reads it in
// nano-units, rounding any discarded non-zero digit up (apimachinery rounds values finer than 1n
// up, so a request is never lost). Exact for any input length. The result still has to be
// multiplied by 10^shift when shift > 0; -1 when it is out of range.
i128 digits_value(std::string_view num, std::string_view denom, int exp2, long shift) {
  std::string digits;
  digits.reserve(num.size() + denom.size() + 20);
  for (char c : num)
    if (!digits.empty() || c != '0') digits += static_cast<char>(c - '0');
  for (char c : denom)
    if (!digits.empty() || c != '0') digits += static_cast<char>(c - '0');
  for (int k = 0; k < exp2 && !digits.empty(); ++k) {
    int carry = 0;
    for (size_t j = digits.size(); j-- > 0;) {
      int d = digits[j] * 2 + carry;
      digits[j] = static_cast<char>(d % 10);
      carry = d / 10;
    }
    if (carry) digits.insert(digits.begin(), static_cast<char>(carry));
  }
  long keep = static_cast<long>(digits.size()) + (shift < 0 ? shift : 0);
  i128 value = 0;
  bool sticky = false;
  for (long j = 0; j < static_cast<long>(digits.size()); ++j) {
    if (j < keep) {
      value = value * 10 + digits[j];
      if (value > kLimit) return -1;
    } else if (digits[j] != 0) {
      sticky = true;
    }
  }
  if (sticky) ++value;
  return value;
}

}  // namespace

Quantity Quantity::from_milli(int64_t milli, Format format) {
  Quantity q;
  q.nanos_ = i128(milli) * 1'000'000;
  q.format_ = format;
  return q;
}

Quantity Quantity::from_int(int64_t value, Format format) {
  Quantity q;
  q.nanos_ = i128(value) * kNano;
  q.format_ = format;
  return q;
}

int64_t Quantity::milli_value() const { return saturate(ceil_div(nanos_, 1'000'000)); }
int64_t Quantity::value() const { return saturate(ceil_div(nanos_, kNano)); }

Quantity& Quantity::operator+=(const Quantity& other) {
  if (nanos_ == 0) format_ = other.format_;
  if (__builtin_add_overflow(nanos_, other.nanos_, &nanos_)) nanos_ = other.nanos_ > 0 ? kLimit : -kLimit;
  return *this;
}

Quantity& Quantity::operator-=(const Quantity& other) {
  if (nanos_ == 0) format_ = other.format_;
  if (__builtin_sub_overflow(nanos_, other.nanos_, &nanos_)) nanos_ = other.nanos_ < 0 ? kLimit : -kLimit;
  return *this;
}

std::string Quantity::to_string() const {
  if (nanos_ == 0) return "0";
  bool negative = nanos_ < 0;
  i128 magnitude = negative ? -nanos_ : nanos_;
  std::string sign = negative ? "-" : "";

  Format format = format_;
  if (format == Format::kBinarySI && (magnitude < 1024 * kNano || magnitude % kNano != 0)) {
    // Below 1Ki, or fractional: binary suffixes would round, so apimachinery switches to decimal.
    format = Format::kDecimalSI;
  }
  if (format == Format::kBinarySI) {
    i128 units = magnitude / kNano;
    static constexpr std::array<const char*, 7> kSuffixes = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    size_t k = 0;
    while (k + 1 < kSuffixes.size() && units % 1024 == 0) {
      units /= 1024;
      ++k;
    }
    return sign + i128_to_string(units) + kSuffixes[k];
  }

  // Decimal: mantissa * 10^exponent with the exponent a multiple of 3 and no trailing zeros
  // beyond that.
  i128 mantissa = magnitude;
  int exponent = -9;
  while (mantissa % 10 == 0) {
    mantissa /= 10;
    ++exponent;
  }
  int rem = ((exponent % 3) + 3) % 3;
  if (rem == 1) {
    mantissa *= 10;
    exponent -= 1;
  } else if (rem == 2) {
    mantissa *= 100;
    exponent -= 2;
  }
  if (format == Format::kDecimalExponent) return sign + i128_to_string(mantissa) + (exponent == 0 ? "" : fmt::format("e{}", exponent));
  static constexpr std::array<const char*, 10> kSuffixes = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
  while (exponent > 18) {  // beyond Exa there is no SI suffix: write the mantissa out
    mantissa *= 1000;
    exponent -= 3;
  }
  return sign + i128_to_string(mantissa) + kSuffixes[(exponent + 9) / 3];
}

}  // namespace spotshift::model
