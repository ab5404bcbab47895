#include "common/tls.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "common/fs.h"

namespace endure::tls {

namespace {

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;
using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;

constexpr long kCaDays = 3650;
constexpr long kServerDays = 825;
constexpr long kRenewBeforeSeconds = 30L * 86400;

Error tls_error(const std::string& what) { return make_error("TlsError", what); }

bool is_ip(const std::string& name) {
  unsigned char buf[16];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

std::string pem_of(const X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_X509(bio.get(), cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string pem_of(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Cert read_cert(const std::filesystem::path& path) {
  auto text = fs::read_file(path);
  if (!text) return {nullptr, X509_free};
  Bio bio(BIO_new_mem_buf(text->data(), static_cast<int>(text->size())), BIO_free);
  return {PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free};
}

Key read_key(const std::filesystem::path& path) {
  auto text = fs::read_file(path);
  if (!text) return {nullptr, EVP_PKEY_free};
  Bio bio(BIO_new_mem_buf(text->data(), static_cast<int>(text->size())), BIO_free);
  return {PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free};
}

bool add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for key, signed by issuer_key (the issuer's own when issuer is null).
Cert make_cert(EVP_PKEY* key, const std::string& common_name, X509* issuer, EVP_PKEY* issuer_key,
               const std::vector<std::string>& names) {
  Cert cert(X509_new(), X509_free);
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;  // a positive serial
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), (issuer ? kServerDays : kCaDays) * 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("endure"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  bool ok = add_extension(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (issuer == nullptr) {
    ok = ok &&
         add_extension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
    ok = ok && add_extension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    std::string san;
    for (const auto& n : names) {
      san += std::string(san.empty() ? "" : ",") + (is_ip(n) ? "IP:" : "DNS:") + n;
    }
    ok = ok && add_extension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    ok = ok && add_extension(cert.get(), signer, NID_key_usage, "critical,digitalSignature");
    ok = ok && add_extension(cert.get(), signer, NID_ext_key_usage, "serverAuth");
    ok = ok && add_extension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
    ok = ok && !san.empty() && add_extension(cert.get(), signer, NID_subject_alt_name, san);
  }
  if (!ok || X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return {nullptr, X509_free};
  return cert;
}

bool covers(X509* cert, const std::string& name) {
  return is_ip(name) ? X509_check_ip_asc(cert, name.c_str(), 0) == 1
                     : X509_check_host(cert, name.c_str(), name.size(), 0, nullptr) == 1;
}

bool lasts(X509* cert) {
  time_t soon = time(nullptr) + kRenewBeforeSeconds;
  return X509_cmp_time(X509_get0_notAfter(cert), &soon) > 0;
}

}  // namespace

Result<Files> ensure_files(const std::filesystem::path& dir,
                           const std::vector<std::string>& names) {
  if (auto s = fs::make_dirs(dir, 0700); !s) return s.error();
  Files f{dir / "ca.pem", dir / "ca.key", dir / "server.pem", dir / "server.key"};
  Key ca_key = read_key(f.ca_key);
  Cert ca = read_cert(f.ca_cert);
  if (!ca_key || !ca || X509_check_private_key(ca.get(), ca_key.get()) != 1 || !lasts(ca.get())) {
    ca_key.reset(EVP_EC_gen("P-256"));
    if (!ca_key) return tls_error("cannot make the CA's key");
    ca = make_cert(ca_key.get(), "endure CA", nullptr, ca_key.get(), {});
    if (!ca) return tls_error("cannot make the CA's certificate");
    // The key first: a CA certificate on disk always has its key.
    if (auto s = fs::atomic_write_file(f.ca_key, pem_of(ca_key.get()), 0600); !s) return s.error();
    if (auto s = fs::atomic_write_file(f.ca_cert, pem_of(ca.get()), 0644); !s) return s.error();
  }
  Cert server = read_cert(f.server_cert);
  Key server_key = read_key(f.server_key);
  bool current = server && server_key &&
                 X509_check_private_key(server.get(), server_key.get()) == 1 &&
                 X509_verify(server.get(), ca_key.get()) == 1 && lasts(server.get()) &&
                 std::all_of(names.begin(), names.end(),
                             [&](const std::string& n) { return covers(server.get(), n); });
  if (!current) {
    server_key.reset(EVP_EC_gen("P-256"));
    if (!server_key) return tls_error("cannot make the server's key");
    server = make_cert(server_key.get(), "endured", ca.get(), ca_key.get(), names);
    if (!server) return tls_error("cannot make the server's certificate");
    if (auto s = fs::atomic_write_file(f.server_key, pem_of(server_key.get()), 0600); !s) {
      return s.error();
    }
    if (auto s = fs::atomic_write_file(f.server_cert, pem_of(server.get()), 0644); !s) {
      return s.error();
    }
  }
  return f;
}

std::vector<std::string> machine_names() {
  std::vector<std::string> names = {"localhost"};
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') names.emplace_back(host);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr) continue;
      char text[INET6_ADDRSTRLEN] = {};
      if (a->ifa_addr->sa_family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text,
                  sizeof text);
      } else if (a->ifa_addr->sa_family == AF_INET6) {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(a->ifa_addr);
        if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;  // needs a zone: not for a SAN
        inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
      } else {
        continue;
      }
      if (std::find(names.begin(), names.end(), text) == names.end()) names.emplace_back(text);
    }
    freeifaddrs(list);
  }
  return names;
}

}  // namespace endure::tls
