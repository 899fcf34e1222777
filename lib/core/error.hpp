#pragma once
// Error and Result: expected failures are values, never exceptions.

#include <boost/system/result.hpp>

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace spotshift {

// What went wrong, coarse enough for a caller to decide what to do next.
enum class ErrorKind {
  kApi,        // the apiserver answered with a non-2xx Status; see code and reason
  kNetwork,    // connect, read or write failed; safe to retry when the verb is
  kTimeout,    // a deadline expired; safe to retry when the verb is
  kTls,        // TLS handshake or certificate verification failed
  kDecode,     // a body could not be parsed, or a field had the wrong type
  kInvalid,    // bad input: a flag, a policy field, a selector, a quantity
  kConfig,     // bad configuration: kubeconfig, in-cluster files, exec plugin
  kCancelled,  // the operation was cancelled, usually by shutdown
  kInternal,   // a bug
};

std::string_view to_string(ErrorKind kind);

// One entry of a Status's details.causes.
struct StatusCause {
  std::string reason;
  std::string field;
  std::string message;
  bool operator==(const StatusCause&) const = default;
};

// An error as the operator reports it. API errors carry the apiserver's Status fields.
struct Error {
  ErrorKind kind = ErrorKind::kInternal;
  int code = 0;         // HTTP status code, 0 when there is none
  std::string reason;   // Status.reason such as "NotFound", "Conflict", "Expired"
  std::string message;  // one sentence for a person
  std::vector<StatusCause> causes;
  std::optional<int> retry_after_seconds;
  // A terminal error will not go away by retrying (a reconciler's verdict on bad input): it is
  // logged and counted, never requeued.
  bool terminal = false;

  static Error api(int code, std::string reason, std::string message);
  static Error network(std::string message);
  static Error timeout(std::string message);
  static Error tls(std::string message);
  static Error decode(std::string message);
  static Error invalid(std::string message);
  static Error config(std::string message);
  static Error cancelled(std::string message = "operation cancelled");
  static Error internal(std::string message);

  bool is_not_found() const { return code == 404; }
  bool is_already_exists() const { return code == 409 && reason == "AlreadyExists"; }
  bool is_conflict() const { return code == 409 && reason != "AlreadyExists"; }
  bool is_expired() const { return code == 410 || reason == "Expired" || reason == "Gone"; }
  bool is_too_many_requests() const { return code == 429; }
  bool is_invalid() const { return code == 422 || kind == ErrorKind::kInvalid; }
  // Network errors, timeouts, 429 and 5xx (other than 501) are worth retrying for safe verbs.
  bool is_retryable() const;

  // "NotFound (404): pods \"x\" not found"
  std::string to_string() const;
  Error& make_terminal() {
    terminal = true;
    return *this;
  }
  // Prefixes the message with context: "reading kubeconfig /x: " + message.
  Error& wrap(std::string_view context);
};

// Printing a Result (tests, logs) prints the error's to_string().
std::ostream& operator<<(std::ostream& os, const Error& e);

// Used by boost::system::result<T, Error>::value() when it holds an error: found through ADL.
[[noreturn]] void throw_exception_from_error(const Error& e, const boost::source_location& loc);

// Thrown only by Result::value() on an error: a bug or a start-up failure.
class ErrorException : public std::runtime_error {
 public:
  explicit ErrorException(Error e);
  const Error& error() const { return error_; }

 private:
  Error error_;
};

template <class T>
using Result = boost::system::result<T, Error>;

// Shorthand for returning an error from a function returning Result<T>.
inline boost::system::result<void, Error> ok() { return {}; }

}  // namespace spotshift
