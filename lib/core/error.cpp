#include "core/error.hpp"

#include <fmt/format.h>

#include <ostream>

namespace spotshift {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kApi:
      return "api";
    case ErrorKind::kNetwork:
      return "network";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kTls:
      return "tls";
    case ErrorKind::kDecode:
      return "decode";
    case ErrorKind::kInvalid:
      return "invalid";
    case ErrorKind::kConfig:
      return "config";
    case ErrorKind::kCancelled:
      return "cancelled";
    case ErrorKind::kInternal:
      return "internal";
  }
  return "unknown";
}

static Error make(ErrorKind kind, std::string message) {
  Error e;
  e.kind = kind;
  e.message = std::move(message);
  return e;
}

Error Error::api(int code, std::string reason, std::string message) {
  Error e = make(ErrorKind::kApi, std::move(message));
  e.code = code;
  e.reason = std::move(reason);
  return e;
}
Error Error::network(std::string message) { return make(ErrorKind::kNetwork, std::move(message)); }
Error Error::timeout(std::string message) { return make(ErrorKind::kTimeout, std::move(message)); }
Error Error::tls(std::string message) { return make(ErrorKind::kTls, std::move(message)); }
Error Error::decode(std::string message) { return make(ErrorKind::kDecode, std::move(message)); }
Error Error::invalid(std::string message) { return make(ErrorKind::kInvalid, std::move(message)); }
Error Error::config(std::string message) { return make(ErrorKind::kConfig, std::move(message)); }
Error Error::cancelled(std::string message) { return make(ErrorKind::kCancelled, std::move(message)); }
Error Error::internal(std::string message) { return make(ErrorKind::kInternal, std::move(message)); }

bool Error::is_retryable() const {
  switch (kind) {
    case ErrorKind::kNetwork:
    case ErrorKind::kTimeout:
      return true;
    case ErrorKind::kApi:
      return code == 429 || (code >= 500 && code != 501);
    default:
      return false;
  }
}

std::string Error::to_string() const {
  if (kind == ErrorKind::kApi) {
    if (reason.empty()) return fmt::format("HTTP {}: {}", code, message);
    return fmt::format("{} ({}): {}", reason, code, message);
  }
  return fmt::format("{} error: {}", spotshift::to_string(kind), message);
}

Error& Error::wrap(std::string_view context) {
  message = fmt::format("{}: {}", context, message);
  return *this;
}

std::ostream& operator<<(std::ostream& os, const Error& e) { return os << e.to_string(); }

ErrorException::ErrorException(Error e) : std::runtime_error(e.to_string()), error_(std::move(e)) {}

void throw_exception_from_error(const Error& e, const boost::source_location&) { throw ErrorException(e); }

}  // namespace spotshift
