#pragma once
// Credentials for requests: a static token, a token file re-read at least every minute and after
// a 401, or an exec plugin whose credential is cached until it expires and re-run after a 401.
// Getting one may block (the exec plugin runs a process): the client calls it off its I/O thread.

#include "core/clock.hpp"
#include "kube/config.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace spotshift::kube {

struct Credential {
  std::string token;
  std::string client_certificate_pem;  // exec plugins may return a client certificate instead
  std::string client_key_pem;
  std::optional<Time> expiry;
  bool operator==(const Credential&) const = default;
};

class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  // The credential to use; refresh after a 401 forces a fresh one. Thread-safe.
  virtual Result<Credential> get(bool refresh) = 0;
  // Whether get() may block for long (it then runs on a worker thread).
  virtual bool may_block() const { return false; }
};

class StaticCredentials final : public CredentialSource {
 public:
  explicit StaticCredentials(Credential c) : c_(std::move(c)) {}
  Result<Credential> get(bool) override { return c_; }

 private:
  Credential c_;
};

class TokenFileCredentials final : public CredentialSource {
 public:
  TokenFileCredentials(std::string path, const Clock& clock, Duration max_age = std::chrono::minutes(1));
  Result<Credential> get(bool refresh) override;

 private:
  std::mutex mutex_;
  std::string path_;
  const Clock& clock_;
  Duration max_age_;
  std::optional<Time> read_at_;
  std::string token_;
};

// Runs a client.authentication.k8s.io exec plugin (KUBERNETES_EXEC_INFO in its environment,
// an ExecCredential on its stdout).
class ExecCredentials final : public CredentialSource {
 public:
  ExecCredentials(ExecConfig exec, std::string server, std::string ca_pem, const Clock& clock);
  Result<Credential> get(bool refresh) override;
  bool may_block() const override { return true; }
  int runs() const { return runs_; }

 private:
  std::mutex mutex_;
  ExecConfig exec_;
  std::string server_;
  std::string ca_pem_;
  const Clock& clock_;
  std::optional<Credential> cached_;
  int runs_ = 0;
};

// Runs the plugin once and parses its ExecCredential. Errors name the command.
Result<Credential> run_exec_plugin(const ExecConfig& exec, const std::string& server, const std::string& ca_pem,
                                   std::chrono::seconds timeout = std::chrono::seconds(60));

// The source for a config: exec beats tokenFile beats token; none when it has no credentials.
std::shared_ptr<CredentialSource> make_credentials(const ClientConfig& config, const Clock& clock);

}  // namespace spotshift::kube
