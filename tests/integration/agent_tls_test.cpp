// Agents on other machines reach endured over TLS only, and only as agents: a client that
// does not trust endured's CA gets no answer, plain HTTP gets none, and the operator API
// is not served there.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/http_client.h"
#include "common/tls.h"
#include "integration/harness.h"

namespace endure::test {
namespace {

TEST(AgentTls, OnlyTlsWithEndureCaAndOnlyAgentActions) {
  TempDir dir;
  Endured e(dir.path() / "home");
  int tls_port = e.port() + 1000;
  std::filesystem::create_directories(e.home());
  std::ofstream(e.home() / "config.json") << json{{"AgentTlsPort", tls_port}}.dump();
  e.start();
  const auto ca = (e.home() / "tls" / "ca.pem").string();
  ASSERT_TRUE(std::filesystem::exists(ca));
  EXPECT_EQ(std::filesystem::status(e.home() / "tls" / "ca.key").permissions() &
                std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::string token;
  std::ifstream(e.home() / "token") >> token;

  auto agents = parse_endpoint("https://127.0.0.1:" + std::to_string(tls_port), ca);
  ASSERT_TRUE(agents.ok()) << agents.error().message;
  // An agent call reaches endured, which refuses the made-up node's token.
  auto heartbeat = HttpClient(*agents, "not-a-node-token")
                       .post("/v1/AgentHeartbeat", {{"InstanceId", "i-0000000000000000"}});
  ASSERT_FALSE(heartbeat.ok());
  EXPECT_EQ(heartbeat.error().code, "Unauthorized") << heartbeat.error().message;
  // The operator's own token does not open the operator API here.
  auto list = HttpClient(*agents, token).post("/v1/ListClusters", json::object());
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().code, "Unauthorized");
  EXPECT_NE(list.error().message.find("loopback only"), std::string::npos) << list.error().message;
  // ... which loopback serves as before.
  EXPECT_TRUE(e.call("ListClusters", json::object()).ok());

  // A client that pins another CA does not talk to this endured at all.
  auto other = tls::ensure_files(dir.path() / "other-ca", {"127.0.0.1"});
  ASSERT_TRUE(other.ok()) << other.error().message;
  auto stranger =
      parse_endpoint("https://127.0.0.1:" + std::to_string(tls_port), other->ca_cert.string());
  auto refused = HttpClient(*stranger, token).post("/v1/AgentHeartbeat", json::object());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "ConnectionFailure") << refused.error().message;
  // Nor does plain HTTP on the TLS port.
  auto plain =
      HttpClient(Endpoint::loopback(tls_port), token).post("/v1/AgentHeartbeat", json::object());
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.error().code, "Unauthorized") << plain.error().message;
}

}  // namespace
}  // namespace endure::test
