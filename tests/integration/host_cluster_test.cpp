// A cluster on registered hosts reached over SSH: every node on a host of its pool, under
// its slot's Slurm name with the host's name and address; srun runs across the hosts; a
// spec naming a pool that is not registered is refused; deleting the cluster leaves every
// host clean and back in its pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "common/fs.h"
#include "common/http_client.h"
#include "integration/harness.h"
#include "integration/test_hosts.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

class HostCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(hosts_.ok()) << hosts_.error();
    ASSERT_TRUE(file_server_.ok()) << file_server_.error();
    e_ = std::make_unique<Endured>(dir_.path() / "home");
    std::filesystem::create_directories(e_->home());
    // A short auto-resume bound: a test waits it out when no host is left.
    std::ofstream(e_->home() / "config.json")
        << json{{"AgentTlsPort", e_->port() + 1000}, {"AutoResumeTimeoutSeconds", 25}}.dump();
    e_->start();
    auto file = dir_.path() / "pools.json";
    std::ofstream(file) << hosts_.pool_file("rack-a").dump(2);
    auto registered =
        e_->cli({"register-host-pools", "--cli-input-json", "file://" + file.string()});
    ASSERT_EQ(registered.exit_code, 0) << registered.err;
  }
  void TearDown() override {
    if (e_) e_->delete_all_clusters();
  }

  json spec(const std::string& name, int workers, const std::string& pool = "rack-a") {
    json s = make_spec(name, workers);
    for (auto& g : s["InstanceGroups"]) g["HostPool"] = pool;
    s["SharedFileSystem"] = file_server_.shared_file_system(0, kExport);
    return s;
  }
  // HostName -> its summary.
  std::map<std::string, json> hosts_by_name() {
    auto out = e_->cli({"list-hosts", "--output", "json"});
    EXPECT_EQ(out.exit_code, 0) << out.err;
    std::map<std::string, json> by_name;
    const json reply = json::parse(out.out);
    for (const auto& h : reply["HostSummaries"]) by_name[h["HostName"]] = h;
    return by_name;
  }
  std::size_t index_of(const std::string& host_name) {
    for (std::size_t i = 0; i < hosts_.hosts().size(); ++i) {
      if (hosts_[i].name == host_name) return i;
    }
    return 0;
  }

  static constexpr const char* kExport = "/local/export/ml";  // the file server's folder
  TempDir dir_;
  TestHosts hosts_{6, 5};
  TestHosts file_server_{1, 6};  // serves the clusters' /fsx over SSH; in no pool
  std::unique_ptr<Endured> e_;
};

TEST_F(HostCluster, RunsSlurmAcrossHostsAndLeavesThemCleanWhenDeleted) {
  // host-1 and host-5 are registered with another host's key: each is refused and set aside,
  // and the pool's next host taken. The controller gets both, in turn: a host's failure
  // does not spend its slot's one retry.
  json pools = hosts_.pool_file("rack-a");
  pools["Pools"][0]["Hosts"][0]["HostKey"] = hosts_[1].host_key;
  pools["Pools"][0]["Hosts"][4]["HostKey"] = hosts_[1].host_key;
  ASSERT_TRUE(e_->call("RegisterHostPools", pools).ok());
  auto unknown = e_->call("CreateCluster", spec("ml", 2, "rack-z"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("InstanceGroups[0].HostPool: no pool named rack-z"),
            std::string::npos)
      << unknown.error().message;

  // A file server that is not the one the spec names is refused before any host is taken.
  json other_server = spec("other-fs", 1);
  other_server["SharedFileSystem"]["HostKey"] = hosts_[1].host_key;
  ASSERT_TRUE(e_->call("CreateCluster", other_server).ok());
  ASSERT_EQ(e_->wait_status("other-fs", {"InService", "Failed"}, 60s), "Failed");
  auto refused_fs = e_->call("DescribeCluster", {{"ClusterName", "other-fs"}});
  ASSERT_TRUE(refused_fs.ok());
  EXPECT_NE((*refused_fs)["FailureMessage"].get<std::string>().find(
                "SharedFileSystem: host file server 127.0.56.1"),
            std::string::npos)
      << refused_fs->dump();
  EXPECT_NE((*refused_fs)["FailureMessage"].get<std::string>().find("not the one registered"),
            std::string::npos)
      << refused_fs->dump();
  ASSERT_TRUE(e_->call("DeleteCluster", {{"ClusterName", "other-fs"}}).ok());

  // The host's own Slurm and munge files, as they are before a node is put there.
  const std::string own_files =
      "find /etc/slurm /etc/munge -type f -exec sha256sum {} + 2>/dev/null | sort";
  std::vector<std::string> before;
  for (std::size_t i = 0; i < hosts_.hosts().size(); ++i) {
    before.push_back(hosts_.ssh(i, own_files).out);
  }
  ASSERT_TRUE(e_->call("CreateCluster", spec("ml", 3)).ok());
  ASSERT_EQ(e_->wait_status("ml", {"InService", "Failed"}, 180s), "InService")
      << e_->cli({"list-cluster-events", "--cluster-name", "ml"}).out
      << e_->cli({"list-cluster-nodes", "--cluster-name", "ml"}).out << e_->cli({"list-hosts"}).out;

  auto in_use = hosts_by_name();
  ASSERT_EQ(in_use.size(), 6u);
  const std::set<std::size_t> refused = {0, 4};  // host-1, host-5
  for (std::size_t i : refused) {
    const json& h = in_use[hosts_[i].name];
    EXPECT_EQ(h["State"], "Quarantined") << h.dump();
    EXPECT_NE(h.value("Reason", "").find("SSH host key is not the one registered"),
              std::string::npos)
        << h.dump();
    EXPECT_NE(hosts_.ssh(i, "ls /opt/endure 2>&1").out.find("No such file"), std::string::npos)
        << "nothing was copied to " << hosts_[i].name << ", whose key did not match";
    in_use.erase(hosts_[i].name);
  }
  auto controller_events =
      e_->call("ListClusterEvents", {{"ClusterName", "ml"}, {"NodeName", "controller-0"}});
  ASSERT_TRUE(controller_events.ok());
  int host_failures = 0;
  for (const auto& ev : (*controller_events)["Events"]) {
    host_failures += ev["EventType"] == "InstanceFailed";
  }
  EXPECT_EQ(host_failures, 2) << "the controller's slot met both refused hosts";
  std::string controller_host;
  for (const auto& [name, h] : in_use) {
    EXPECT_EQ(h["State"], "InUse") << h.dump();
    auto node =
        e_->call("DescribeClusterNode", {{"ClusterName", "ml"}, {"NodeId", h["InstanceId"]}});
    ASSERT_TRUE(node.ok()) << node.error().message;
    const json& details = (*node)["NodeDetails"];
    // The Slurm name is the slot's; the machine is the host.
    EXPECT_EQ(details["PrivatePrimaryIp"], h["Address"]) << details.dump();
    if (details["NodeName"] == "controller-0") controller_host = name;
  }
  ASSERT_FALSE(controller_host.empty());
  auto exec = e_->cli({"exec", "--cluster-name", "ml", "--node", "controller-0", "--", "true"});
  EXPECT_EQ(exec.exit_code, 1);
  EXPECT_NE(exec.err.find("reach it with ssh"), std::string::npos) << exec.err;

  auto srun = hosts_.ssh(index_of(controller_host), "srun -N3 hostname | sort");
  ASSERT_EQ(srun.exit_code, 0) << srun.err;
  int on_hosts = 0;
  for (const auto& [name, h] : in_use) {
    if (name != controller_host && srun.out.find(name + "\n") != std::string::npos) ++on_hosts;
  }
  EXPECT_EQ(on_hosts, 3) << srun.out;
  // /fsx is the file server's folder on every node: what one node writes, the others and
  // the server see at once, and srun's ranks write there too.
  ASSERT_EQ(hosts_.ssh(index_of(controller_host), "echo hello > /fsx/hello").exit_code, 0);
  for (const auto& [name, h] : in_use) {
    auto seen = hosts_.ssh(index_of(name),
                           "grep -c ' /fsx .* - fuse.sshfs ' /proc/self/mountinfo; cat /fsx/hello; "
                           "stat -c %a /opt/endure/config/fsx_key");
    EXPECT_EQ(seen.out, "1\nhello\n400\n") << name << ": " << seen.err;
  }
  auto ranks = hosts_.ssh(index_of(controller_host),
                          "srun -N3 bash -c 'hostname > /fsx/rank-$SLURM_PROCID'");
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  auto served = file_server_.ssh(0, std::string("cd ") + kExport + " && cat hello rank-*");
  EXPECT_EQ(std::count(served.out.begin(), served.out.end(), '\n'), 4) << served.out << served.err;
  // The cluster's key speaks sftp alone: no shell on the file server.
  auto shell = hosts_.ssh(
      index_of(controller_host),
      "ssh -F /dev/null -p 2222 -i /opt/endure/config/fsx_key -o BatchMode=yes "
      "-o UserKnownHostsFile=/opt/endure/config/fsx_known_hosts root@127.0.56.1 echo a-shell");
  EXPECT_EQ(shell.out.find("a-shell"), std::string::npos) << shell.out;
  // A node speaking for another node is refused: a worker's own token, another's InstanceId.
  std::vector<json> agents;
  for (const auto& [name, h] : in_use) {
    auto config = hosts_.ssh(index_of(name), "cat /opt/endure/config/agent.json");
    ASSERT_EQ(config.exit_code, 0) << config.err;
    agents.push_back(json::parse(config.out));
  }
  auto tls = parse_endpoint(agents[0]["Endpoint"], (e_->home() / "tls" / "ca.pem").string());
  ASSERT_TRUE(tls.ok()) << tls.error().message;
  auto own = HttpClient(*tls, agents[0]["Token"])
                 .post("/v1/AgentHeartbeat", {{"InstanceId", agents[0]["InstanceId"]}});
  EXPECT_TRUE(own.ok()) << "its own heartbeat over TLS: " << own.error().message;
  auto other = HttpClient(*tls, agents[0]["Token"])
                   .post("/v1/AgentHeartbeat", {{"InstanceId", agents[1]["InstanceId"]}});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, "Unauthorized") << other.error().message;

  // The munge key never shows in a log: endured's, or an agent's or the lifecycle's on a host.
  auto clusters = e_->call("ListClusters", json::object());
  ASSERT_TRUE(clusters.ok());
  std::string cluster_id = (*clusters)["ClusterSummaries"][0]["ClusterId"];
  auto key = fs::read_file(e_->home() / "secrets" / cluster_id / "munge.key");
  ASSERT_TRUE(key.ok());
  const std::string key_part = key->substr(0, 24);
  // The cluster's key for the file server likewise (a line from the middle of its base64).
  auto fsx_key = fs::read_file(e_->home() / "secrets" / cluster_id / "fsx_ed25519");
  ASSERT_TRUE(fsx_key.ok());
  const std::string fsx_key_part = fsx_key->substr(fsx_key->find('\n') + 1, 40);
  auto endured_log = fs::read_file(e_->home() / "endured.log");
  EXPECT_EQ(endured_log->find(key_part), std::string::npos) << "endured.log holds the munge key";
  EXPECT_EQ(endured_log->find(fsx_key_part), std::string::npos) << "endured.log holds the fsx key";
  for (std::size_t i = 0; i < hosts_.hosts().size(); ++i) {
    if (refused.count(i)) continue;
    auto logs =
        hosts_.ssh(i, "cat /var/log/endure-agent.log /opt/endure/lifecycle.log 2>/dev/null");
    EXPECT_EQ(logs.out.find(key_part), std::string::npos) << hosts_[i].name << "'s logs";
    EXPECT_EQ(logs.out.find(fsx_key_part), std::string::npos) << hosts_[i].name << "'s logs";
  }
  // The munge key is the root's alone on every host.
  for (std::size_t i = 0; i < hosts_.hosts().size(); ++i) {
    if (refused.count(i)) continue;
    EXPECT_EQ(hosts_.ssh(i, "stat -c %a /etc/munge/munge.key").out, "400\n") << hosts_[i].name;
  }

  ASSERT_TRUE(e_->call("DeleteCluster", {{"ClusterName", "ml"}}).ok());
  ASSERT_TRUE(wait_until(
      [&] {
        return !e_->call("DescribeCluster", {{"ClusterName", "ml"}}).ok();
      },
      120s));
  for (const auto& [name, h] : hosts_by_name()) {
    if (name == hosts_[0].name || name == hosts_[4].name) continue;  // set aside
    EXPECT_EQ(h["State"], "Available") << h.dump();
    EXPECT_FALSE(h.contains("InstanceId")) << h.dump();
  }
  for (std::size_t i = 0; i < hosts_.hosts().size(); ++i) {
    auto left = hosts_.ssh(i,
                           "pgrep -fa '[e]ndure|[s]lurm[cd]|[m]unged|[s]shfs'; "
                           "grep ' /fsx ' /proc/self/mountinfo; ls /opt/endure 2>&1");
    EXPECT_NE(left.out.find("No such file"), std::string::npos)
        << hosts_[i].name << " still has: " << left.out;
    EXPECT_EQ(left.out.find("endure-agent"), std::string::npos) << left.out;
    EXPECT_EQ(left.out.find("slurmd"), std::string::npos) << left.out;
    EXPECT_EQ(left.out.find("sshfs"), std::string::npos) << left.out;
    EXPECT_EQ(hosts_.ssh(i, own_files).out, before[i]) << hosts_[i].name << ": files not restored";
  }
  // The file server keeps the data and no longer lets the deleted cluster's key in.
  auto server = file_server_.ssh(0, std::string("cat /root/.ssh/authorized_keys; ls ") + kExport);
  EXPECT_EQ(server.out.find("endure:"), std::string::npos) << server.out;
  EXPECT_NE(server.out.find("hello"), std::string::npos) << server.out;
}

TEST_F(HostCluster, EnduredKilledMidBootstrapFinishesItOnce) {
  e_->stop();
  e_->start("host.bootstrap.before_service");
  (void)e_->call("CreateCluster", spec("ml", 3));
  ASSERT_TRUE(e_->wait_exit(120s)) << "endured never reached the crash point";
  e_->start();
  ASSERT_EQ(e_->wait_status("ml", {"InService", "Failed"}, 180s), "InService")
      << e_->cli({"list-cluster-events", "--cluster-name", "ml"}).out;
  int serving = 0;
  for (const auto& [name, h] : hosts_by_name()) {
    if (h["State"] != "InUse") continue;
    ++serving;
    EXPECT_EQ(hosts_.ssh(index_of(name), "pgrep -fc '[e]ndure-agent-service run'").out, "1\n")
        << name << " runs its agent's service once";
  }
  EXPECT_EQ(serving, 4);
}

// The NodeReturnedToService event of a node, for the log ("replaced, back in service 4.2 s
// after the fault was found").
std::string back_in_service(const Endured& e, const std::string& node) {
  auto events = e.call("ListClusterEvents", {{"ClusterName", "ml"}, {"NodeName", node}});
  if (!events) return "";
  for (const auto& ev : (*events)["Events"]) {
    if (ev["EventType"] == "NodeReturnedToService") return ev["Description"];
  }
  return "";
}

// The node on each host, by node name: {host name, instance id}.
std::map<std::string, std::pair<std::string, std::string>> nodes_on_hosts(
    const std::map<std::string, json>& hosts, const Endured& e) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const auto& [name, h] : hosts) {
    if (!h.contains("InstanceId")) continue;
    auto node = e.call("DescribeClusterNode", {{"ClusterName", "ml"}, {"NodeId", h["InstanceId"]}});
    if (node) out[(*node)["NodeDetails"]["NodeName"]] = {name, h["InstanceId"]};
  }
  return out;
}

// Waits until node_name runs as a new Running instance (not `old_instance`); its host and
// instance then.
std::pair<std::string, std::string> wait_replaced(const Endured& e, const std::function<std::map<std::string, json>()>& hosts,
                                                  const std::string& node_name,
                                                  const std::string& old_instance) {
  std::pair<std::string, std::string> now;
  wait_until(
      [&] {
        auto node = e.call("DescribeClusterNode", {{"ClusterName", "ml"}, {"NodeId", node_name}});
        if (!node) return false;
        const json& d = (*node)["NodeDetails"];
        if (d["InstanceId"] == old_instance || d["InstanceStatus"]["Status"] != "Running") {
          return false;
        }
        now = nodes_on_hosts(hosts(), e)[node_name];
        return true;
      },
      120s);
  return now;
}

TEST_F(HostCluster, APulledWorkerHostIsReplacedByTheWarmSpareAndThePoolRefillsIt) {
  json s = spec("ml", 3);
  s["InstanceGroups"][1]["WarmSpares"] = 1;
  ASSERT_TRUE(e_->call("CreateCluster", s).ok());
  ASSERT_EQ(e_->wait_status("ml", {"InService", "Failed"}, 180s), "InService")
      << e_->cli({"list-cluster-events", "--cluster-name", "ml"}).out;
  auto hosts = [&] { return hosts_by_name(); };
  auto before = nodes_on_hosts(hosts(), *e_);
  ASSERT_EQ(before.size(), 5u) << "a controller, 3 workers and the spare";
  const auto [pulled, old_instance] = before["worker-1"];
  const auto [spare_host, spare_instance] = before["worker-spare-1"];
  const auto controller_host = before["controller-0"].first;
  EXPECT_EQ(ready_warm_spares(*e_, "ml"), 1);
  std::string remaining;
  for (const auto& [name, h] : hosts()) {
    if (h["State"] == "Available") remaining = name;
  }
  ASSERT_FALSE(remaining.empty());

  // The plug pulled: no power, no power command answers (a reset fails).
  ASSERT_EQ(hosts_.power(index_of(pulled), "pull").exit_code, 0);
  auto now = wait_replaced(*e_, hosts, "worker-1", old_instance);
  ASSERT_FALSE(now.first.empty()) << e_->cli({"list-cluster-events", "--cluster-name", "ml"}).out
                                  << e_->cli({"list-hosts"}).out;
  EXPECT_EQ(now, std::make_pair(spare_host, spare_instance)) << "the spare took worker-1's name";
  EXPECT_EQ(hosts()[pulled]["State"], "Quarantined") << hosts()[pulled].dump();
  std::printf("pulled host, warm spare: worker-1 %s\n", back_in_service(*e_, "worker-1").c_str());

  // Slurm reaches worker-1 on the spare's host, by the same name.
  bool ran = wait_until(
      [&] {
        auto srun = hosts_.ssh(index_of(controller_host), "timeout 20 srun -N3 hostname");
        return srun.exit_code == 0 && srun.out.find(spare_host + "\n") != std::string::npos;
      },
      60s);
  EXPECT_TRUE(ran)
      << hosts_.ssh(index_of(controller_host), "sinfo -N; scontrol show node worker-1").out;

  // The pool refills the spare from its remaining host.
  ASSERT_TRUE(wait_until(
      [&] {
        auto spare = nodes_on_hosts(hosts(), *e_)["worker-spare-1"];
        return spare.first == remaining && ready_warm_spares(*e_, "ml") == 1;
      },
      120s))
      << e_->cli({"list-cluster-nodes", "--cluster-name", "ml"}).out;
  const auto refilled = nodes_on_hosts(hosts(), *e_)["worker-spare-1"];

  // The next pull takes that spare, and the pool has no host left to make another.
  const auto [second, second_instance] = before["worker-2"];
  ASSERT_EQ(hosts_.power(index_of(second), "pull").exit_code, 0);
  now = wait_replaced(*e_, hosts, "worker-2", second_instance);
  EXPECT_EQ(now, refilled);
  ASSERT_TRUE(wait_until(
      [&] {
        auto events = e_->call("ListClusterEvents",
                               {{"ClusterName", "ml"}, {"NodeName", "worker-spare-1"}});
        if (!events) return false;
        for (const auto& ev : (*events)["Events"]) {
          if (ev["EventType"] == "NoHostAvailable") return true;
        }
        return false;
      },
      60s));
  EXPECT_EQ(ready_warm_spares(*e_, "ml"), 0);

  // No spare and no host left: a step that lost worker-0 waits a bounded time for it
  // (AutoResumeTimeoutSeconds) and then ends, naming the pool it waits on.
  const std::string third = before["worker-0"].first;
  process::Output job;
  std::thread session([&] {
    job = hosts_.ssh(index_of(controller_host),
                     "salloc -N2 -w worker-0,worker-1 bash -c 'srun --auto-resume=1 -N2 bash -c "
                     "\"sleep 60\"; echo srun rc=$?' 2>&1",
                     150s);
  });
  bool running = wait_until(
      [&] { return hosts_.ssh(index_of(third), "pgrep -x sleep").exit_code == 0; }, 60s);
  if (running) {
    EXPECT_EQ(hosts_.power(index_of(third), "pull").exit_code, 0);
  }
  session.join();
  ASSERT_TRUE(running) << job.out;
  EXPECT_NE(job.out.find("not re-run: nodes not back in service within 25 s"), std::string::npos)
      << job.out;
  EXPECT_NE(job.out.find("worker-0: waiting for an Available host in pool rack-a"),
            std::string::npos)
      << job.out;
  EXPECT_EQ(job.out.find("srun rc=0"), std::string::npos) << job.out;

  // Back from repair only when it passes basic checks; then a waiting node is made on it.
  auto refused = e_->cli({"return-host", "--host-name", pulled});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  ASSERT_EQ(hosts_.power(index_of(pulled), "plug").exit_code, 0);
  ASSERT_EQ(hosts_.power(index_of(pulled), "on").exit_code, 0);
  auto returned = e_->cli({"return-host", "--host-name", pulled, "--output", "json"});
  ASSERT_EQ(returned.exit_code, 0) << returned.err;
  EXPECT_EQ(json::parse(returned.out)["Host"]["State"], "Available");
  EXPECT_TRUE(wait_until([&] { return hosts()[pulled]["State"] == "InUse"; }, 120s))
      << e_->cli({"list-cluster-nodes", "--cluster-name", "ml"}).out;
}

TEST_F(HostCluster, AHungHostIsAnsweredByThePowerCommandAndComesBackAsItself) {
  ASSERT_TRUE(e_->call("CreateCluster", spec("ml", 2)).ok());
  ASSERT_EQ(e_->wait_status("ml", {"InService", "Failed"}, 180s), "InService");
  auto before = nodes_on_hosts(hosts_by_name(), *e_);
  const auto [host, instance] = before["worker-0"];
  ASSERT_EQ(hosts_.power(index_of(host), "freeze").exit_code, 0);
  bool back = wait_until(
      [&] {
        auto events =
            e_->call("ListClusterEvents", {{"ClusterName", "ml"}, {"NodeName", "worker-0"}});
        if (!events) return false;
        for (const auto& ev : (*events)["Events"]) {
          if (ev["EventType"] == "NodeReturnedToService") return true;
        }
        return false;
      },
      120s);
  ASSERT_TRUE(back) << e_->cli({"list-cluster-events", "--cluster-name", "ml"}).out;
  auto node = e_->call("DescribeClusterNode", {{"ClusterName", "ml"}, {"NodeId", "worker-0"}});
  ASSERT_TRUE(node.ok());
  EXPECT_EQ((*node)["NodeDetails"]["InstanceId"], instance) << "rebooted, not replaced";
  std::printf("hung host: worker-0 %s\n", back_in_service(*e_, "worker-0").c_str());
  EXPECT_EQ(hosts_by_name()[host]["State"], "InUse");
  auto events = e_->cli({"list-cluster-events", "--cluster-name", "ml", "--node-name", "worker-0"});
  EXPECT_NE(events.out.find("NodeRebooting"), std::string::npos) << events.out;
}

TEST_F(HostCluster, AnAutoResumeStepSurvivesThePullOfTheHostRunningRankZero) {
  ASSERT_TRUE(e_->call("CreateCluster", spec("ml", 3)).ok());
  ASSERT_EQ(e_->wait_status("ml", {"InService", "Failed"}, 180s), "InService");
  auto nodes = nodes_on_hosts(hosts_by_name(), *e_);
  const std::size_t controller = index_of(nodes["controller-0"].first);
  // Rank 0 runs on the allocation's first node, worker-0.
  const std::string rank0_host = nodes["worker-0"].first;
  // The allocation and srun live on the controller host, attached to this session; the
  // three ranks run on the workers and print where they ran.
  process::Output job;
  std::thread session([&] {
    job = hosts_.ssh(controller,
                     "salloc -N3 bash -c 'srun --auto-resume=1 -u -N3 bash -c "
                     "\"echo start \\$SLURM_PROCID \\$(hostname); sleep 12; "
                     "echo done \\$SLURM_PROCID \\$(hostname)\"; echo srun rc=$?' 2>&1",
                     180s);
  });
  bool running = wait_until(
      [&] { return hosts_.ssh(index_of(rank0_host), "pgrep -x sleep").exit_code == 0; }, 60s);
  if (running) {
    std::this_thread::sleep_for(1s);
    EXPECT_EQ(hosts_.power(index_of(rank0_host), "pull").exit_code, 0);
  }
  session.join();
  ASSERT_TRUE(running) << job.out;
  std::printf("pulled rank-0 host %s: worker-0 %s\n%s\n", rank0_host.c_str(),
              back_in_service(*e_, "worker-0").c_str(), job.out.c_str());
  EXPECT_NE(job.out.find("srun rc=0"), std::string::npos) << job.out;
  EXPECT_EQ(job.out.find("done 0 " + rank0_host), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("done 0 "), std::string::npos) << job.out;
}

}  // namespace
}  // namespace endure::test
