// The collector over a real SQLite store: node gauges from rows, counters from the event
// log that come out the same after a restart, and the cache.
#include "controller/metrics/collector.h"

#include <gtest/gtest.h>

#include "support/store_fixture.h"

namespace endure::metrics {
namespace {

class CollectorTest : public test::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    store::ClusterRow c;
    c.id = "c0ffee000001";
    c.name = "demo";
    c.arn = "arn:endure:cluster/" + c.id;
    c.status = api::ClusterStatus::kInService;
    c.spec = {{"ClusterName", "demo"},
              {"InstanceGroups",
               {{{"InstanceGroupName", "controller"}, {"InstanceCount", 1}},
                {{"InstanceGroupName", "worker"}, {"InstanceCount", 2}}}}};
    c.provisioning = {{"controller_group", "controller"}};
    c.index = 1;
    ASSERT_TRUE(store_->insert_cluster(c).ok());
    add_instance("i-00000000000000001", "controller", "controller-0", "Running");
    add_instance("i-00000000000000002", "worker", "worker-0", "Running");
    add_instance("i-00000000000000003", "worker", "worker-1", "Running");
  }

  void add_instance(const std::string& id, const std::string& group, const std::string& node,
                    const std::string& status) {
    store::InstanceRow r;
    r.instance_id = id;
    r.cluster_id = "c0ffee000001";
    r.group = group;
    r.node_name = node;
    r.slot = node.back() - '0';
    r.agent_token = "token-" + id;
    r.status = *api::parse_node_status(status);
    r.lifecycle_status = api::LifecycleStatus::kSucceeded;
    ASSERT_TRUE(store_->insert_instance(r).ok());
  }

  void event(const std::string& node, const std::string& type, const std::string& text,
             double time) {
    store::EventRow e;
    e.cluster_id = "c0ffee000001";
    e.resource_type = "Instance";
    e.node_name = node;
    e.type = type;
    e.description = text;
    e.time = time;
    ASSERT_TRUE(store_->append_event(e).ok());
  }

  std::unique_ptr<Collector> collector(double cache_seconds = 0) {
    return std::make_unique<Collector>(CollectorParts{*store_,
                                                      gauges_,
                                                      api_,
                                                      nullptr,
                                                      [](const std::string&) { return 1.5; },
                                                      {"Pending", "Running", "ShuttingDown"},
                                                      cache_seconds});
  }

  static bool has(const std::string& text, const std::string& line) {
    return text.find(line + "\n") != std::string::npos;
  }

  NodeGauges gauges_;
  ApiStats api_;
};

TEST_F(CollectorTest, NodesBySpecGroupAndStatus) {
  auto text = collector()->render();
  EXPECT_TRUE(has(text, "endure_cluster_up{cluster=\"demo\"} 1")) << text;
  EXPECT_TRUE(has(text, "endure_cluster_status{cluster=\"demo\",status=\"InService\"} 1"));
  EXPECT_TRUE(has(text, "endure_nodes{cluster=\"demo\",group=\"worker\",status=\"Running\"} 2"));
  EXPECT_TRUE(has(text, "endure_nodes{cluster=\"demo\",group=\"worker\",status=\"Pending\"} 0"));
  EXPECT_TRUE(has(text, "endure_warm_spares_ready{cluster=\"demo\",group=\"worker\"} 0"));
  EXPECT_TRUE(has(text,
                  "endure_node_heartbeat_age_seconds{cluster=\"demo\",node=\"worker-1\","
                  "instance_id=\"i-00000000000000003\"} 1.5"));
  EXPECT_TRUE(has(text, "endure_auto_resumes_total{cluster=\"demo\",outcome=\"granted\"} 0"));
}

TEST_F(CollectorTest, AgentGaugesShownForLiveNodesOnly) {
  gauges_.record("i-00000000000000002",
                 {{"load1", 0.75}, {"mem_available_bytes", 1024}, {"evil\"key", 1}, {"gpus", "x"}});
  gauges_.record("i-00000000000000099", {{"load1", 9}});  // no such live instance
  auto text = collector()->render();
  EXPECT_TRUE(has(text,
                  "endure_node_load1{cluster=\"demo\",node=\"worker-0\","
                  "instance_id=\"i-00000000000000002\"} 0.75"))
      << text;
  EXPECT_TRUE(has(text,
                  "endure_node_memory_available_bytes{cluster=\"demo\",node=\"worker-0\","
                  "instance_id=\"i-00000000000000002\"} 1024"));
  EXPECT_EQ(text.find("evil"), std::string::npos);
  EXPECT_EQ(text.find("i-00000000000000099"), std::string::npos);
  EXPECT_EQ(gauges_.snapshot().count("i-00000000000000099"), 0u);
}

TEST_F(CollectorTest, CountersFoldNewEventsAndSurviveARestart) {
  auto c = collector();
  event("worker-0", "NodeUnhealthy", "Unhealthy: crash: gone -> Replace", 1000);
  event("worker-0", "NodeDrained", "down and drained", 1000.25);
  event("worker-0", "NodeReplacing", "crash", 1001);
  auto first = c->render();
  EXPECT_TRUE(has(first, "endure_health_verdicts_total{cluster=\"demo\",kind=\"crash\"} 1"))
      << first;
  EXPECT_TRUE(has(first, "endure_recoveries_total{cluster=\"demo\",action=\"Replace\"} 1"));
  EXPECT_TRUE(
      has(first, "endure_recovery_drained_seconds_count{cluster=\"demo\",action=\"Replace\"} 1"));

  // Only the new event is folded in the next render.
  event("worker-0", "NodeReturnedToService", "replaced", 1012);
  auto second = c->render();
  EXPECT_TRUE(has(second, "endure_health_verdicts_total{cluster=\"demo\",kind=\"crash\"} 1"));
  EXPECT_TRUE(has(
      second, "endure_recovery_in_service_seconds_sum{cluster=\"demo\",action=\"Replace\"} 12"));

  // A restarted endured (a new collector on a reopened store) reads the same numbers.
  c.reset();
  reopen();
  auto restarted = collector()->render();
  auto strip_api = [](const std::string& t) { return t.substr(0, t.find("# HELP endure_api")); };
  EXPECT_EQ(strip_api(restarted), strip_api(second));
}

TEST_F(CollectorTest, RendersOncePerCacheWindow) {
  auto c = collector(/*cache_seconds=*/60);
  auto before = c->render();
  event("worker-1", "NodeUnhealthy", "Unhealthy: hang: silent -> Reboot", 5);
  EXPECT_EQ(c->render(), before);  // within the window: the cached text
  auto fresh = collector(0)->render();
  EXPECT_TRUE(has(fresh, "endure_health_verdicts_total{cluster=\"demo\",kind=\"hang\"} 1"));
}

TEST_F(CollectorTest, FamilyWritersComeLast) {
  auto c = collector();
  c->add_family_writer([](TextWriter& out) {
    out.family("endure_train_loss", "gauge", "Training loss.");
    out.sample("endure_train_loss", {{"cluster", "demo"}}, 2.5);
  });
  auto text = c->render();
  EXPECT_TRUE(has(text, "endure_train_loss{cluster=\"demo\"} 2.5"));
  EXPECT_GT(text.find("endure_train_loss"), text.find("endure_nodes"));
}

}  // namespace
}  // namespace endure::metrics
