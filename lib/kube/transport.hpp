#pragma once
// The client's door to HTTP: one request and response, or a response streamed for a watch.
// A scripted fake implements this in tests; http_transport.cpp is the real one (Beast).

#include "core/error.hpp"
#include "core/time.hpp"
#include "kube/config.hpp"
#include "kube/request.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace spotshift::kube {

namespace asio = boost::asio;

using Headers = std::vector<std::pair<std::string, std::string>>;

// The header's value, matched case-insensitively, or nullptr.
const std::string* find_header(const Headers& headers, std::string_view name);

struct HttpResponse {
  int status = 0;
  Headers headers;
  std::string body;
  const std::string* header(std::string_view name) const { return find_header(headers, name); }
};

// A response body read as it arrives (watches).
class BodyStream {
 public:
  virtual ~BodyStream() = default;
  // The next bytes of the body, or an empty string once it has ended cleanly. An error when the
  // connection breaks, or nothing arrives for `idle`.
  virtual asio::awaitable<Result<std::string>> read(Duration idle) = 0;
  virtual void close() = 0;
};

struct StreamResponse {
  int status = 0;
  Headers headers;
  std::string body;                    // the whole body when the status is not 2xx
  std::unique_ptr<BodyStream> stream;  // the body as it comes when it is 2xx
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual asio::awaitable<Result<HttpResponse>> send(const Request& req, Duration timeout) = 0;
  // Sends req and returns once the response headers are in.
  virtual asio::awaitable<Result<StreamResponse>> open(const Request& req, Duration timeout) = 0;
  // Client certificates returned by exec plugins: used by connections made from now on.
  virtual Result<void> set_client_certificate(const std::string& cert_pem, const std::string& key_pem) = 0;
};

struct TransportOptions {
  size_t max_idle_connections = 8;
  size_t max_body_bytes = size_t(1) << 30;
};

// HTTP/1.1 over TCP or TLS (OpenSSL: SNI, CA and hostname verification on unless the config
// says insecure-skip-tls-verify), keep-alive connections, IPv6 hosts.
Result<std::shared_ptr<Transport>> make_http_transport(asio::any_io_executor executor, const ClientConfig& config,
                                                       TransportOptions options = {});

}  // namespace spotshift::kube
