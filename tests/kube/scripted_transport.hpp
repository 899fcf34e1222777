#pragma once
// A transport that plays a script: each request must be the next expected one, and every
// scripted step must have happened by the end of the test.

#include "kube/transport.hpp"
#include "support/catch.hpp"

#include <deque>
#include <functional>

namespace spotshift::kube::testing {

struct Step {
  std::string method;
  std::string target;  // path?query, compared exactly
  int status = 200;
  Headers headers;
  std::string body;
  std::optional<Error> failure;         // a transport error instead of a response
  std::vector<std::string> chunks;      // for watches: the streamed body, chunk by chunk
  std::optional<Error> stream_failure;  // for watches: the stream breaks after the chunks
  std::function<void(const Request&)> check;
};

class ScriptedTransport final : public Transport {
 public:
  ~ScriptedTransport() override { verify(); }

  ScriptedTransport& expect(Step s) {
    steps_.push_back(std::move(s));
    return *this;
  }
  ScriptedTransport& expect(std::string method, std::string target, int status, std::string body, Headers headers = {}) {
    Step s;
    s.method = std::move(method);
    s.target = std::move(target);
    s.status = status;
    s.body = std::move(body);
    s.headers = std::move(headers);
    return expect(std::move(s));
  }

  void verify() {
    CHECK(steps_.empty());
    if (!steps_.empty()) {
      for (const auto& s : steps_) UNSCOPED_INFO("scripted step never happened: " << s.method << " " << s.target);
      steps_.clear();
    }
  }

  std::vector<Request> seen;

  asio::awaitable<Result<HttpResponse>> send(const Request& req, Duration) override {
    Step s = take(req);
    if (s.failure) co_return *s.failure;
    co_return HttpResponse{s.status, s.headers, s.body};
  }

  asio::awaitable<Result<StreamResponse>> open(const Request& req, Duration) override {
    Step s = take(req);
    if (s.failure) co_return *s.failure;
    StreamResponse r;
    r.status = s.status;
    r.headers = s.headers;
    if (s.status / 100 != 2) {
      r.body = s.body;
    } else {
      r.stream = std::make_unique<Chunks>(std::move(s.chunks), s.stream_failure);
    }
    co_return r;
  }

  Result<void> set_client_certificate(const std::string& cert, const std::string&) override {
    certificate = cert;
    return {};
  }
  std::string certificate;

 private:
  class Chunks final : public BodyStream {
   public:
    Chunks(std::vector<std::string> chunks, std::optional<Error> failure) : failure_(std::move(failure)) {
      for (auto& c : chunks) chunks_.push_back(std::move(c));
    }
    asio::awaitable<Result<std::string>> read(Duration) override {
      if (chunks_.empty()) {
        if (failure_) co_return *failure_;
        co_return std::string();
      }
      std::string c = std::move(chunks_.front());
      chunks_.pop_front();
      co_return c;
    }
    void close() override { chunks_.clear(); }

   private:
    std::deque<std::string> chunks_;
    std::optional<Error> failure_;
  };

  Step take(const Request& req) {
    seen.push_back(req);
    INFO("request: " << req.method << " " << req.target());
    REQUIRE_FALSE(steps_.empty());
    Step s = std::move(steps_.front());
    steps_.pop_front();
    CHECK(req.method == s.method);
    CHECK(req.target() == s.target);
    if (s.check) s.check(req);
    return s;
  }

  std::deque<Step> steps_;
};

}  // namespace spotshift::kube::testing
