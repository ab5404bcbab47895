// endured's /metrics scraped by Debian's real Prometheus (1 s scrape interval): the node
// counts follow a replacement and a deletion (how soon: bench/metrics/prometheus_lag.py),
// and the cluster's up-style and Slurm metrics are there. Prometheus runs on loopback with
// its own config and storage, and is stopped by its pid.
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <optional>

#include "cluster_fixture.h"
#include "support/loopback_port.h"

namespace endure::test {
namespace {

using Clock = std::chrono::steady_clock;

class Prometheus {
 public:
  Prometheus(const std::filesystem::path& dir, int endured_port) : port_(unused_loopback_port()) {
    std::filesystem::create_directories(dir / "data");
    std::ofstream(dir / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        << "scrape_configs:\n  - job_name: endured\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << endured_port << "']\n";
    std::string log = (dir / "prometheus.log").string();
    std::vector<std::string> args = {"/usr/bin/prometheus",
                                     "--config.file=" + (dir / "prometheus.yml").string(),
                                     "--storage.tsdb.path=" + (dir / "data").string(),
                                     "--web.listen-address=127.0.0.1:" + std::to_string(port_)};
    pid_ = fork();
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Prometheus() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    if (!wait_until([&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; }, 10s)) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  bool ready() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(1);
    auto r = c.Get("/-/ready");
    return r && r->status == 200;
  }

  // The value of an instant query's only series; nullopt when it has none.
  std::optional<double> query(const std::string& promql) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(5);
    auto r = c.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!r || r->status != 200) return std::nullopt;
    auto j = json::parse(r->body, nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return std::nullopt;
    const auto& result = j["data"]["result"];
    if (!result.is_array() || result.size() != 1) return std::nullopt;
    return std::stod(result[0]["value"][1].get<std::string>());
  }

  // Waits until the query's value satisfies pred; the time it took, or nullopt.
  std::optional<double> wait_for(const std::string& promql, const std::function<bool(double)>& pred,
                                 std::chrono::seconds timeout) const {
    auto start = Clock::now();
    bool ok = wait_until(
        [&] {
          auto v = query(promql);
          return v && pred(*v);
        },
        timeout);
    if (!ok) return std::nullopt;
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

 private:
  int port_;
  int pid_ = -1;
};

class Metrics : public ClusterFixture {};

TEST_F(Metrics, PrometheusSeesNodesRecoveriesAndSlurm) {
  start_cluster("it-metrics", 2);
  Endured& e = *e_;
  Prometheus prom(home_.path() / "prometheus", e.port());
  ASSERT_TRUE(wait_until([&] { return prom.ready(); }, 30s)) << "prometheus did not start";

  const std::string running =
      "endure_nodes{cluster=\"it-metrics\",group=\"worker\",status=\"Running\"}";
  ASSERT_TRUE(prom.wait_for(
      running, [](double v) { return v == 2; }, 30s));
  EXPECT_EQ(prom.query("up{job=\"endured\"}"), 1.0);
  EXPECT_EQ(prom.query("endure_cluster_up{cluster=\"it-metrics\"}"), 1.0);
  EXPECT_TRUE(prom.wait_for(
      "endure_node_load1{cluster=\"it-metrics\",node=\"worker-0\"}",
      [](double v) { return v >= 0; }, 30s))
      << "no agent gauges";
  EXPECT_TRUE(prom.wait_for(
      "endure_node_heartbeat_age_seconds{node=\"worker-0\"}",
      [](double v) { return v >= 0 && v < 10; }, 10s));
  // Slurm's view, sampled in the background: the exporter's names.
  EXPECT_TRUE(prom.wait_for(
      "endure_slurm_up{cluster=\"it-metrics\"}", [](double v) { return v == 1; }, 40s));
  EXPECT_TRUE(prom.wait_for(
      "slurm_nodes_idle{cluster=\"it-metrics\"}", [](double v) { return v >= 2; }, 40s));
  EXPECT_TRUE(prom.wait_for(
      "slurm_cpus_total{cluster=\"it-metrics\"}", [](double v) { return v > 0; }, 10s));
  EXPECT_TRUE(prom.query("slurm_queue_pending{cluster=\"it-metrics\"}").has_value());

  // Replace a node (back in service within about a second on local nodes, so the dip in
  // Running may fall between scrapes): the counters and histograms of the event log.
  auto before = nodes_by_name(e, name_);
  long long mark = last_event_id(e, name_);
  auto r = e.call("BatchReplaceClusterNodes",
                  {{"ClusterName", name_}, {"NodeIds", {before["worker-1"].id}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(wait_returned(e, name_, "worker-1", mark, 120s));
  EXPECT_TRUE(prom.wait_for(
      "endure_recoveries_total{cluster=\"it-metrics\",action=\"Replace\"}",
      [](double v) { return v == 1; }, 10s));
  EXPECT_TRUE(prom.wait_for(
      "endure_recovery_in_service_seconds_count{cluster=\"it-metrics\",action=\"Replace\"}",
      [](double v) { return v == 1; }, 10s));
  EXPECT_TRUE(prom.wait_for(
      "sum(endure_api_requests_total{action=\"BatchReplaceClusterNodes\",code=\"200\"})",
      [](double v) { return v >= 1; }, 10s));
  EXPECT_TRUE(prom.wait_for(
      running, [](double v) { return v == 2; }, 10s));

  // Pull a node for good: the API shows it leaving Running, and then Prometheus (how long
  // after is bench/metrics' figure, prometheus_lag.py).
  auto now = nodes_by_name(e, name_);
  auto del = e.call("BatchDeleteClusterNodes",
                    {{"ClusterName", name_}, {"NodeIds", {now["worker-1"].id}}});
  ASSERT_TRUE(del.ok()) << del.error().message;
  ASSERT_TRUE(wait_until(
      [&] {
        auto nodes = nodes_by_name(e, name_);
        return nodes.count("worker-1") == 0 || nodes["worker-1"].status != "Running";
      },
      30s));
  ASSERT_TRUE(prom.wait_for(
      running, [](double v) { return v == 1; }, 10s))
      << "Prometheus never saw the node leave Running";
  // It stays out: the series reads 1 from now on.
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(prom.query(running), 1.0);
}

}  // namespace
}  // namespace endure::test
