#include "kube/certs.hpp"

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>

namespace spotshift::kube {

namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;
using Bio = std::unique_ptr<BIO, Free>;

Error openssl_error(std::string_view what) {
  unsigned long code = ERR_get_error();
  char buf[256] = "unknown error";
  if (code) ERR_error_string_n(code, buf, sizeof buf);
  return Error::tls(fmt::format("{}: {}", what, buf));
}

Key new_key() { return Key(EVP_EC_gen("P-256")); }

std::string to_pem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  char* data;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string to_pem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<Cert> read_cert(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Cert c(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!c) return openssl_error("reading certificate");
  return c;
}

Result<Key> read_key(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Key k(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!k) return openssl_error("reading private key");
  return k;
}

bool add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, Free> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

// A certificate for key, signed by (issuer_cert, issuer_key), or self-signed when those are null.
Result<Cert> make_cert(EVP_PKEY* key, const std::string& cn, const std::vector<std::string>& orgs, X509* issuer_cert, EVP_PKEY* issuer_key,
                       std::chrono::hours validity, const std::vector<std::pair<int, std::string>>& extensions) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  long seconds = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(validity).count());
  if (seconds >= 0) {
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), seconds);
  } else {
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), 2 * seconds);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), seconds);
  }
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  for (const auto& o : orgs)
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(o.c_str()), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer_cert ? X509_get_subject_name(issuer_cert) : name);
  for (const auto& [nid, value] : extensions)
    if (!add_ext(cert.get(), issuer_cert ? issuer_cert : cert.get(), nid, value))
      return openssl_error(fmt::format("adding certificate extension {}", value));
  if (!X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256())) return openssl_error("signing certificate");
  return cert;
}

}  // namespace

Result<CertificateAuthority> CertificateAuthority::create(const std::string& common_name, std::chrono::hours validity) {
  Key key = new_key();
  if (!key) return openssl_error("generating CA key");
  auto cert = make_cert(key.get(), common_name, {}, nullptr, nullptr, validity,
                        {{NID_basic_constraints, "critical,CA:TRUE"},
                         {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
                         {NID_subject_key_identifier, "hash"}});
  if (!cert) return cert.error();
  CertificateAuthority ca;
  ca.pair_ = {to_pem(cert->get()), to_pem(key.get())};
  return ca;
}

Result<CertificateAuthority> CertificateAuthority::from_pair(CertPair pair) {
  auto cert = read_cert(pair.cert_pem);
  if (!cert) return cert.error();
  auto key = read_key(pair.key_pem);
  if (!key) return key.error();
  if (X509_check_private_key(cert->get(), key->get()) != 1) return Error::tls("the CA certificate and key do not belong together");
  if (X509_check_ca(cert->get()) == 0) return Error::tls("the CA certificate is not a CA");
  CertificateAuthority ca;
  ca.pair_ = std::move(pair);
  return ca;
}

Result<CertPair> CertificateAuthority::issue(const std::string& cn, const std::vector<std::string>& orgs, std::chrono::hours validity,
                                             const char* usage, const std::string& san) const {
  auto ca_cert = read_cert(pair_.cert_pem);
  if (!ca_cert) return ca_cert.error();
  auto ca_key = read_key(pair_.key_pem);
  if (!ca_key) return ca_key.error();
  Key key = new_key();
  std::vector<std::pair<int, std::string>> extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                                                         {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                                                         {NID_ext_key_usage, usage}};
  if (!san.empty()) extensions.emplace_back(NID_subject_alt_name, san);
  auto cert = make_cert(key.get(), cn, orgs, ca_cert->get(), ca_key->get(), validity, extensions);
  if (!cert) return cert.error();
  return CertPair{to_pem(cert->get()), to_pem(key.get())};
}

Result<CertPair> CertificateAuthority::issue_server(const std::vector<std::string>& dns, const std::vector<std::string>& ips,
                                                    std::chrono::hours validity) const {
  std::string san;
  for (const auto& d : dns) san += (san.empty() ? "" : ",") + std::string("DNS:") + d;
  for (const auto& ip : ips) san += (san.empty() ? "" : ",") + std::string("IP:") + ip;
  return issue(dns.empty() ? "kubesim" : dns[0], {}, validity, "serverAuth", san);
}

Result<CertPair> CertificateAuthority::issue_client(const std::string& user, const std::vector<std::string>& groups,
                                                    std::chrono::hours validity) const {
  return issue(user, groups, validity, "clientAuth", "");
}

Result<std::string> certificate_common_name(const std::string& pem) {
  auto cert = read_cert(pem);
  if (!cert) return cert.error();
  char buf[256];
  int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert->get()), NID_commonName, buf, sizeof buf);
  if (n < 0) return Error::tls("certificate has no common name");
  return std::string(buf, static_cast<size_t>(n));
}

Result<Time> certificate_expiry(const std::string& pem) {
  auto cert = read_cert(pem);
  if (!cert) return cert.error();
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert->get()), &tm) != 1) return openssl_error("reading the certificate's notAfter");
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

Result<void> check_server_certificate(const CertPair& serving, const std::string& ca_pem, const std::vector<std::string>& dns,
                                      const std::vector<std::string>& ips) {
  auto cert = read_cert(serving.cert_pem);
  if (!cert) return cert.error();
  auto key = read_key(serving.key_pem);
  if (!key) return key.error();
  if (X509_check_private_key(cert->get(), key->get()) != 1) return Error::tls("the certificate and key do not belong together");
  auto ca = read_cert(ca_pem);
  if (!ca) return ca.error();
  std::unique_ptr<EVP_PKEY, Free> ca_key(X509_get_pubkey(ca->get()));
  if (!ca_key || X509_verify(cert->get(), ca_key.get()) != 1) return Error::tls("the certificate is not signed by the CA");
  for (const auto& name : dns)
    if (X509_check_host(cert->get(), name.c_str(), name.size(), 0, nullptr) != 1)
      return Error::tls(fmt::format("the certificate is not valid for {}", name));
  for (const auto& ip : ips)
    if (X509_check_ip_asc(cert->get(), ip.c_str(), 0) != 1) return Error::tls(fmt::format("the certificate is not valid for {}", ip));
  return {};
}

}  // namespace spotshift::kube
