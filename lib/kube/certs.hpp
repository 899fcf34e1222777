#pragma once
// A small certificate authority (OpenSSL): the admission webhook's serving certificate, kubesim's
// HTTPS listener and the TLS tests.

#include "core/error.hpp"
#include "core/time.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace spotshift::kube {

struct CertPair {
  std::string cert_pem;
  std::string key_pem;
};

class CertificateAuthority {
 public:
  static Result<CertificateAuthority> create(const std::string& common_name, std::chrono::hours validity = std::chrono::hours(24 * 3650));
  // A CA kept before (a Secret's): the certificate and key must parse and belong together.
  static Result<CertificateAuthority> from_pair(CertPair pair);

  // A serving certificate for these DNS names and IP addresses.
  Result<CertPair> issue_server(const std::vector<std::string>& dns, const std::vector<std::string>& ips,
                                std::chrono::hours validity = std::chrono::hours(24 * 365)) const;
  // A client certificate: CN is the user name, O the groups. A negative validity makes one that
  // has already expired.
  Result<CertPair> issue_client(const std::string& user, const std::vector<std::string>& groups,
                                std::chrono::hours validity = std::chrono::hours(24 * 365)) const;

  const CertPair& pair() const { return pair_; }
  const std::string& cert_pem() const { return pair_.cert_pem; }

 private:
  // A leaf certificate signed by this CA for `usage` (serverAuth, clientAuth), with the subject
  // alternative names `san` unless empty.
  Result<CertPair> issue(const std::string& cn, const std::vector<std::string>& orgs, std::chrono::hours validity, const char* usage,
                         const std::string& san) const;
  CertPair pair_;
};

// The subject common name of a PEM certificate (for tests).
Result<std::string> certificate_common_name(const std::string& pem);
// When a PEM certificate stops being valid (its notAfter).
Result<Time> certificate_expiry(const std::string& pem);
// Whether `serving` is a certificate with its key, signed by the CA `ca_pem`, valid for every one
// of the DNS names and IP addresses; the error says what is wrong.
Result<void> check_server_certificate(const CertPair& serving, const std::string& ca_pem, const std::vector<std::string>& dns,
                                      const std::vector<std::string>& ips);

}  // namespace spotshift::kube
