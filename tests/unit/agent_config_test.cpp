// The agent's config from endured: every field survives the trip, and an https endpoint
// comes with the CA the agent pins.
#include "agent/agent_config.h"

#include <gtest/gtest.h>

#include "common/http_client.h"

namespace endure::agent {
namespace {

TEST(AgentConfig, RoundTripsWithItsCaFileAndPinsItForHttps) {
  AgentConfig c;
  c.endpoint = "https://127.0.0.1:7443";
  c.ca_file = "/opt/endure/config/endure-ca.pem";
  c.instance_id = "i-0123456789abcdef0";
  c.token = "t";
  c.node_name = "worker-3";
  c.group = "worker";
  c.role = "worker";
  c.on_create = "on_create.sh";
  auto back = AgentConfig::from_json(c.to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->to_json(), c.to_json());
  auto ep = parse_endpoint(back->endpoint, back->ca_file);
  ASSERT_TRUE(ep.ok()) << ep.error().message;
  EXPECT_TRUE(ep->tls);
  EXPECT_EQ(ep->ca_file, c.ca_file);
  EXPECT_EQ(ep->url(), "https://127.0.0.1:7443");
  // https without a CA to pin is refused, not trusted to the system's CAs.
  auto unpinned = parse_endpoint("https://127.0.0.1:7443");
  ASSERT_FALSE(unpinned.ok());
  EXPECT_NE(unpinned.error().message.find("CA file"), std::string::npos);
  // An older config without CaFile still reads (plain http on loopback).
  json old = c.to_json();
  old.erase("CaFile");
  old["Endpoint"] = "http://127.0.0.1:7117";
  auto plain = AgentConfig::from_json(old);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->ca_file, "");
}

}  // namespace
}  // namespace endure::agent
