// The agent's config from endured: every field survives the trip, and an https endpoint
// comes with the CA the agent pins. A swapped-in spare's slurmd keeps its command line under
// its new name.
#include <gtest/gtest.h>

#include "agent/swap_in.h"
#include "api/node_files.h"
#include "common/http_client.h"

namespace endure::agent {
namespace {

TEST(AgentConfig, RoundTripsWithItsCaFileAndPinsItForHttps) {
  api::AgentConfig c;
  c.endpoint = "https://127.0.0.1:7443";
  c.ca_file = "/opt/endure/config/endure-ca.pem";
  c.instance_id = "i-0123456789abcdef0";
  c.token = "t";
  c.node_name = "worker-3";
  c.group = "worker";
  c.role = "worker";
  c.on_create = "on_create.sh";
  auto back = api::AgentConfig::from_json(c.to_json());
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
  auto plain = api::AgentConfig::from_json(old);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->ca_file, "");
}

TEST(SwapIn, SlurmdKeepsItsCommandLineUnderTheNewName) {
  using V = std::vector<std::string>;
  EXPECT_EQ(with_node_name({"slurmd", "-N", "w-spare-1"}, "w-3"), (V{"slurmd", "-N", "w-3"}));
  EXPECT_EQ(with_node_name({"/usr/sbin/slurmd", "-f", "/etc/s.conf", "-Nw-spare-1", "-D"}, "w-3"),
            (V{"/usr/sbin/slurmd", "-f", "/etc/s.conf", "-Nw-3", "-D"}));
  EXPECT_EQ(with_node_name({"slurmd"}, "w-3"), (V{"slurmd", "-N", "w-3"}));
  EXPECT_EQ(with_node_name({"slurmd", "-N", "w-3"}, "w-3"), (V{"slurmd", "-N", "w-3"}));
}

}  // namespace
}  // namespace endure::agent
