// Warm spares on local nodes: a crashed worker is back in service from the group's spare
// (the spare's InstanceId under the worker's NodeName), the spare's slot fills again, and a
// spare that dies is lost and refilled without touching any node in service; endured killed
// between the swap and its record finishes the swap once.
#include <gtest/gtest.h>

#include <regex>

#include "cluster_fixture.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

class WarmSpare : public ClusterFixture {};

TEST_F(WarmSpare, ACrashedWorkerIsBackInServiceFromTheSpareAndTheSpareFillsAgain) {
  warm_spares_ = 1;
  start_cluster("it-spare", 2);
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  ASSERT_EQ(before["worker-spare-1"].status, "WarmSpare");
  EXPECT_EQ(ready_warm_spares(e, name_), 1);
  // Slurm knows the spare and schedules nothing on it.
  EXPECT_EQ(e.exec(name_, "controller-0", "sinfo -h -N -o %N | sort -u | tr '\\n' ' '").out,
            "worker-0 worker-1 ");
  EXPECT_NE(
      e.exec(name_, "controller-0", "scontrol -o show node worker-spare-1").out.find("State=IDLE "),
      std::string::npos);

  long long mark = last_event_id(e, name_);
  auto injected = e.cli(
      {"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-1", "--kind", "crash"});
  ASSERT_EQ(injected.exit_code, 0) << injected.out << injected.err;
  ASSERT_TRUE(wait_returned(e, name_, "worker-1", mark)) << events_after(e, name_, mark).dump(2);

  auto events = events_after(e, name_, mark);
  auto swapped = find_event(events, "worker-1", "WarmSpareSwappedIn");
  ASSERT_FALSE(swapped.is_null()) << events.dump(2);
  auto returned = find_event(events, "worker-1", "NodeReturnedToService");
  std::smatch took;
  std::string text = returned["Description"];
  ASSERT_TRUE(std::regex_search(text, took, std::regex("([0-9.]+) s after the fault")));
  std::printf("warm spare: worker-1 back in service %s s after the crash was found\n",
              took[1].str().c_str());
  auto after = nodes_by_name(e, name_);
  EXPECT_EQ(after["worker-1"].id, before["worker-spare-1"].id) << "the spare took the name";
  EXPECT_EQ(after["worker-1"].status, "Running");
  EXPECT_EQ(after["worker-0"].id, before["worker-0"].id);
  EXPECT_EQ(e.exec(name_, "worker-1", "hostname").out, "worker-1\n");
  EXPECT_TRUE(wait_until([&] { return slurm_state(e, name_, "worker-1") == "idle"; }, 20s))
      << slurm_state(e, name_, "worker-1");
  auto srun = e.exec(name_, "controller-0", "timeout 60 srun -N2 hostname | sort | tr '\\n' ' '");
  EXPECT_EQ(srun.out, "worker-0 worker-1 ") << srun.err;

  // The spare's slot fills again, in the background, with a new instance.
  ASSERT_TRUE(wait_until(
      [&] {
        auto now = nodes_by_name(e, name_);
        return now["worker-spare-1"].status == "WarmSpare" &&
               now["worker-spare-1"].id != before["worker-spare-1"].id;
      },
      90s))
      << nodes_by_name(e, name_)["worker-spare-1"].status;
  EXPECT_EQ(ready_warm_spares(e, name_), 1);

  // A spare that dies is lost and made again; no node in service is touched.
  auto refilled = nodes_by_name(e, name_)["worker-spare-1"].id;
  mark = last_event_id(e, name_);
  injected = e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-spare-1",
                    "--kind", "crash"});
  ASSERT_EQ(injected.exit_code, 0) << injected.out << injected.err;
  ASSERT_TRUE(wait_until(
      [&] {
        auto now = nodes_by_name(e, name_);
        return now["worker-spare-1"].status == "WarmSpare" && now["worker-spare-1"].id != refilled;
      },
      90s))
      << events_after(e, name_, mark).dump(2);
  events = events_after(e, name_, mark);
  EXPECT_FALSE(find_event(events, "worker-spare-1", "WarmSpareLost").is_null()) << events.dump(2);
  EXPECT_TRUE(find_event(events, "worker-1", "WarmSpareSwappedIn").is_null());
  auto last = nodes_by_name(e, name_);
  EXPECT_EQ(last["worker-1"].id, after["worker-1"].id);
  EXPECT_EQ(last["worker-0"].id, after["worker-0"].id);
}

TEST_F(WarmSpare, EnduredKilledMidSwapFinishesItOnce) {
  warm_spares_ = 1;
  start_cluster("it-spare", 2);
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  e.stop();
  reap_orphan_instances();
  e.start("spare.before_record");
  long long mark = last_event_id(e, name_);
  auto injected = e.cli(
      {"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-1", "--kind", "crash"});
  ASSERT_EQ(injected.exit_code, 0) << injected.out << injected.err;
  ASSERT_TRUE(e.wait_exit(60s)) << "endured never reached spare.before_record";
  reap_orphan_instances();
  e.start();
  ASSERT_TRUE(wait_returned(e, name_, "worker-1", mark, 120s))
      << events_after(e, name_, mark).dump(2);
  auto after = nodes_by_name(e, name_);
  EXPECT_EQ(after["worker-1"].id, before["worker-spare-1"].id);
  auto counts = event_counts(events_after(e, name_, mark), "worker-1");
  EXPECT_EQ(counts["WarmSpareSwappedIn"], 1);
  EXPECT_EQ(counts["NodeReturnedToService"], 1);
  EXPECT_EQ(counts["InstanceLaunching"], 0) << "no new instance for worker-1";
  EXPECT_EQ(e.exec(name_, "worker-1", "hostname").out, "worker-1\n");
  auto srun = e.exec(name_, "controller-0", "timeout 60 srun -N2 hostname | sort | tr '\\n' ' '");
  EXPECT_EQ(srun.out, "worker-0 worker-1 ") << srun.err;
}

}  // namespace
}  // namespace endure::test
