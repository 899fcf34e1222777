#include "core/error.hpp"

#include "support/catch.hpp"

using namespace spotshift;

static Result<int> half(int v) {
  if (v % 2) return Error::invalid("odd");
  return v / 2;
}

TEST_CASE("a Result carries either a value or an Error", "[error]") {
  auto a = half(4);
  REQUIRE(a);
  CHECK(*a == 2);
  auto b = half(3);
  REQUIRE_FALSE(b);
  CHECK(b.error().kind == ErrorKind::kInvalid);
  CHECK(b.error().message == "odd");
  CHECK_THROWS_AS(b.value(), ErrorException);
}

TEST_CASE("API errors classify by code and reason", "[error]") {
  CHECK(Error::api(404, "NotFound", "x").is_not_found());
  CHECK(Error::api(409, "Conflict", "x").is_conflict());
  CHECK_FALSE(Error::api(409, "AlreadyExists", "x").is_conflict());
  CHECK(Error::api(409, "AlreadyExists", "x").is_already_exists());
  CHECK(Error::api(410, "Expired", "x").is_expired());
  CHECK(Error::api(200, "Expired", "x").is_expired());
  CHECK(Error::api(429, "TooManyRequests", "x").is_retryable());
  CHECK(Error::api(503, "ServiceUnavailable", "x").is_retryable());
  CHECK_FALSE(Error::api(501, "", "x").is_retryable());
  CHECK_FALSE(Error::api(422, "Invalid", "x").is_retryable());
  CHECK(Error::network("reset").is_retryable());
  CHECK(Error::timeout("slow").is_retryable());
  CHECK_FALSE(Error::tls("bad cert").is_retryable());
}

TEST_CASE("errors print their reason, code and message", "[error]") {
  CHECK(Error::api(404, "NotFound", "pods \"x\" not found").to_string() == "NotFound (404): pods \"x\" not found");
  CHECK(Error::api(500, "", "boom").to_string() == "HTTP 500: boom");
  Error e = Error::config("field server is missing");
  e.wrap("kubeconfig /tmp/k");
  CHECK(e.to_string() == "config error: kubeconfig /tmp/k: field server is missing");
}
