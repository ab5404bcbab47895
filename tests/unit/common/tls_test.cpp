// endured's CA and server certificate: made once, kept, made again only when needed, keys
// never readable by others, the server's certificate the CA's and naming what it is asked to.
#include "common/tls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "common/fs.h"
#include "common/process.h"
#include "support/temp_dir.h"

namespace endure::tls {
namespace {

namespace stdfs = std::filesystem;

std::string text(const stdfs::path& p) { return *fs::read_file(p); }

stdfs::perms mode(const stdfs::path& p) {
  return stdfs::status(p).permissions() & stdfs::perms::all;
}

TEST(Tls, MakesACaAndAServerCertificateItSigned) {
  test::TempDir dir;
  auto f = ensure_files(dir.path() / "tls", {"127.0.0.1", "endured.example"});
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(mode(f->ca_key), stdfs::perms::owner_read | stdfs::perms::owner_write);
  EXPECT_EQ(mode(f->server_key), stdfs::perms::owner_read | stdfs::perms::owner_write);
  auto verify =
      process::run({"openssl", "verify", "-CAfile", f->ca_cert.string(), f->server_cert.string()});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  auto names = process::run(
      {"openssl", "x509", "-noout", "-ext", "subjectAltName", "-in", f->server_cert.string()});
  EXPECT_NE(names.out.find("IP Address:127.0.0.1"), std::string::npos) << names.out;
  EXPECT_NE(names.out.find("DNS:endured.example"), std::string::npos) << names.out;
}

TEST(Tls, KeepsWhatHoldsAndRemakesOnlyWhatMust) {
  test::TempDir dir;
  auto first = ensure_files(dir.path(), {"127.0.0.1"});
  ASSERT_TRUE(first.ok());
  std::string ca = text(first->ca_cert), server = text(first->server_cert);
  ASSERT_TRUE(ensure_files(dir.path(), {"127.0.0.1"}).ok());
  EXPECT_EQ(text(first->ca_cert), ca) << "the CA agents pinned stays";
  EXPECT_EQ(text(first->server_cert), server);
  // A new address: a new server certificate from the same CA.
  ASSERT_TRUE(ensure_files(dir.path(), {"127.0.0.1", "127.0.9.9"}).ok());
  EXPECT_EQ(text(first->ca_cert), ca);
  EXPECT_NE(text(first->server_cert), server);
  // A server certificate that is not the CA's is replaced.
  test::TempDir other;
  auto foreign = ensure_files(other.path(), {"127.0.0.1", "127.0.9.9"});
  ASSERT_TRUE(foreign.ok());
  ASSERT_TRUE(fs::atomic_write_file(first->server_cert, text(foreign->server_cert)).ok());
  ASSERT_TRUE(fs::atomic_write_file(first->server_key, text(foreign->server_key), 0600).ok());
  ASSERT_TRUE(ensure_files(dir.path(), {"127.0.0.1", "127.0.9.9"}).ok());
  EXPECT_EQ(process::run({"openssl", "verify", "-CAfile", first->ca_cert.string(),
                          first->server_cert.string()})
                .exit_code,
            0);
}

TEST(Tls, TheMachineNamesIncludeLoopback) {
  auto names = machine_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "127.0.0.1"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "localhost"), names.end());
}

}  // namespace
}  // namespace endure::tls
