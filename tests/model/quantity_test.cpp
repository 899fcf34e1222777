#include "model/quantity.hpp"

#include "support/catch.hpp"

#include <limits>
#include <string>

using namespace spotshift::model;
using F = Quantity::Format;

namespace {
struct Canon {
  const char* in;
  const char* canonical;
  F format;
};
}  // namespace

TEST_CASE("quantities parse to their canonical form", "[quantity]") {
  const Canon cases[] = {
      {"0", "0", F::kDecimalSI},
      {"1", "1", F::kDecimalSI},
      {"+1", "1", F::kDecimalSI},
      {"-1", "-1", F::kDecimalSI},
      {"100m", "100m", F::kDecimalSI},
      {"0.1", "100m", F::kDecimalSI},
      {"1.5", "1500m", F::kDecimalSI},
      {".5", "500m", F::kDecimalSI},
      {"5.", "5", F::kDecimalSI},
      {"1.G", "1G", F::kDecimalSI},
      {"1000", "1k", F::kDecimalSI},
      {"1001", "1001", F::kDecimalSI},
      {"1500k", "1500k", F::kDecimalSI},
      {"1000000", "1M", F::kDecimalSI},
      {"1E", "1E", F::kDecimalSI},
      {"1000E", "1000E", F::kDecimalSI},
      {"0.0001", "100u", F::kDecimalSI},
      {"1n", "1n", F::kDecimalSI},
      {"1000n", "1u", F::kDecimalSI},
      {"0.1n", "1n", F::kDecimalSI},                   // finer than 1n rounds up
      {"1.0000000001", "1000000001n", F::kDecimalSI},  // and is never lost
      {"-0.1n", "-1n", F::kDecimalSI},                 // away from zero
      {"1Ki", "1Ki", F::kBinarySI},
      {"1024", "1024", F::kDecimalSI},
      {"1024Ki", "1Mi", F::kBinarySI},
      {"1536Ki", "1536Ki", F::kBinarySI},
      {"1.5Gi", "1536Mi", F::kBinarySI},
      {"0.5Ki", "512", F::kBinarySI},  // below 1Ki binary switches to decimal
      {"1.5Ki", "1536", F::kBinarySI},
      {"0.1Ki", "102400m", F::kBinarySI},  // fractional: decimal
      {"128Mi", "128Mi", F::kBinarySI},
      {"10Ei", "9223372036854775807", F::kBinarySI},  // BinarySI is capped at 2^63-1
      {"1e3", "1e3", F::kDecimalExponent},
      {"1E3", "1e3", F::kDecimalExponent},
      {"1e-3", "1e-3", F::kDecimalExponent},
      {"12e6", "12e6", F::kDecimalExponent},
      {"1.1e-3", "1100e-6", F::kDecimalExponent},
      {"100e-3", "100e-3", F::kDecimalExponent},
      {"1e0", "1", F::kDecimalExponent},
      {"1e+3", "1e3", F::kDecimalExponent},
      {"999999999999999999999", "999999999999999999999", F::kDecimalSI},
      {"1e27", "1e27", F::kDecimalExponent},
  };
  for (const auto& c : cases) {
    INFO(c.in);
    auto q = Quantity::parse(c.in);
    REQUIRE(q);
    CHECK(q->to_string() == c.canonical);
    CHECK(q->format() == c.format);
    // The canonical form parses back to the same value.
    auto again = Quantity::parse(q->to_string());
    REQUIRE(again);
    CHECK(*again == *q);
  }
}

TEST_CASE("milli and unit values round up like the scheduler reads them", "[quantity]") {
  struct V {
    const char* in;
    int64_t milli;
    int64_t value;
  };
  const V cases[] = {
      {"100m", 100, 1},
      {"1", 1000, 1},
      {"1.1", 1100, 2},
      {"1n", 1, 1},
      {"250m", 250, 1},
      {"0", 0, 0},
      {"2.5", 2500, 3},
      {"128Mi", 134217728000, 134217728},
      {"1Gi", 1073741824000, 1073741824},
      {"1k", 1000000, 1000},
      {"-100m", -100, 0},
  };
  for (const auto& c : cases) {
    INFO(c.in);
    auto q = Quantity::parse(c.in);
    REQUIRE(q);
    CHECK(q->milli_value() == c.milli);
    CHECK(q->value() == c.value);
  }
}

TEST_CASE("short whole quantities and long ones take different paths to the same value", "[quantity]") {
  // Up to 12 digits parse in plain integer arithmetic; longer ones digit by digit. Leading zeros
  // push a value onto the long path without changing it.
  const char* cases[] = {"0",    "7",    "500m", "0.5", "2048Mi",         "1.5Gi", "999999999999",
                         "64Ei", "12e6", "3E-3", "1n",  "123456789012Pi", "250u",  "17k"};
  for (const char* c : cases) {
    INFO(c);
    auto shortq = Quantity::parse(c);
    auto longq = Quantity::parse(std::string(12, '0') + c);
    REQUIRE(shortq);
    REQUIRE(longq);
    CHECK(*shortq == *longq);
    CHECK(shortq->format() == longq->format());
    CHECK(shortq->to_string() == longq->to_string());
  }
  auto ki = Quantity::parse("1Ki");
  REQUIRE(ki);
  CHECK(ki->value() == 1024);
  auto capped = Quantity::parse("9999999Ei");  // BinarySI caps at 2^63-1
  REQUIRE(capped);
  CHECK(capped->value() == std::numeric_limits<int64_t>::max());
  CHECK_FALSE(Quantity::parse("999999999999E"));  // 1e30: beyond the range on the short path too
  CHECK_FALSE(Quantity::parse("0000000999999999999E"));
}

TEST_CASE("invalid quantities are rejected with a message naming the string", "[quantity][malformed]") {
  struct Bad {
    const char* in;
    const char* why;
  };
  const Bad cases[] = {
      {"", "regular expression"},
      {" 1", "regular expression"},
      {"1 ", "regular expression"},
      {"abc", "regular expression"},
      {"1.2.3", "regular expression"},
      {"--1", "suffix"},
      {"1x", "regular expression"},
      {".", "numeric part"},
      {"k", "numeric part"},
      {"-", "numeric part"},
      {"1K", "suffix"},
      {"1Ki5", "suffix"},
      {"1e", "suffix"},
      {"1e+", "suffix"},
      {"1i", "suffix"},
      {"1mm", "suffix"},
      {"1e99999", "range"},
      {"1e28", "range"},
  };
  for (const auto& c : cases) {
    INFO(c.in);
    auto q = Quantity::parse(c.in);
    REQUIRE_FALSE(q);
    CHECK(q.error().message.find(std::string("quantity \"") + c.in + "\"") == 0);
    CHECK(q.error().message.find(c.why) != std::string::npos);
  }
}

TEST_CASE("quantity arithmetic is exact and compares by value", "[quantity]") {
  auto q = [](const char* s) { return Quantity::parse(s).value(); };
  CHECK((q("100m") + q("200m")).to_string() == "300m");
  CHECK((q("0.1") + q("0.2")) == q("0.3"));  // no floating-point surprise
  CHECK((q("1Gi") - q("512Mi")).to_string() == "512Mi");
  CHECK((q("1") - q("1500m")).to_string() == "-500m");
  CHECK(q("1Ki") == q("1024"));
  CHECK(q("1e3") == q("1k"));
  CHECK(q("999m") < q("1"));
  CHECK(q("1Mi") > q("1M"));
  Quantity zero;
  zero += q("1Gi");
  CHECK(zero.format() == F::kBinarySI);
  CHECK(Quantity::from_milli(1500).to_string() == "1500m");
  CHECK(Quantity::from_int(2048, F::kBinarySI).to_string() == "2Ki");
}
