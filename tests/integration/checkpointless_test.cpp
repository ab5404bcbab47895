// Checkpointless recovery on real Slurm: endure-train on four nodes of a cluster whose
// TieredStorageConfig enables the memory tier saves every step to its node's store and one
// peer's, and under srun --auto-resume=1 each fault costs at most the step in flight:
// the trainer killed on a healthy node restores from its own node's store (nothing from
// /fsx), a crashed node's rank from its peer's replica, a rank whose own copy was damaged
// from the replica and says so; two adjacent nodes crashed (both copies of a rank gone)
// fall back to the newest step on /fsx and say so; a store killed in the middle of a
// replication never has a partial step restored. Every run ends with every rank's final
// shard equal, byte for byte, to an uninterrupted run's.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <optional>

#include "auto_resume_fixture.h"
#include "train/ckpt/cluster_store.h"

namespace endure::test {
namespace {

constexpr int kTieredSteps = 150;
constexpr int kTieredDiskEvery = 50;

std::string tiered_trainer_flags() {
  return "--model tiny --dim 128 --n-heads 4 --n-kv-heads 4 --seq-len 128 --batch 1 "
         "--global-batch 12 --threads 1 --zero 2 --steps " +
         std::to_string(kTieredSteps) +
         " --warmup 10 --lr 1e-3 --min-lr 1e-4 --eval-every 0 --keep-last 2 --comm-timeout 30 "
         "--ckpt-every " +
         std::to_string(kTieredDiskEvery);
}

// One try of the job's step: its start line, where it restored from, the steps it fell
// back from, and its losses.
struct TieredTry {
  json start;
  json restored;
  std::vector<int64_t> fell_back;
  std::map<int64_t, double> losses;
  int64_t resumed_from() const { return start.value("resumed_from", json()).is_number() ? start["resumed_from"].get<int64_t>() : 0; }
  int64_t last() const { return losses.empty() ? resumed_from() : losses.rbegin()->first; }
  // Rank r's tier, as the restored line names it.
  std::string tier(int r) const {
    for (const auto& f : restored.value("from", json::array()))
      if (f["rank"] == r) return f["tier"];
    return "";
  }
};

class Checkpointless : public AutoResume {
 protected:
  void start_tiered(int memory_percent = 5) {
    spec_fields_ = {{"TieredStorageConfig",
                     {{"Mode", "Enable"}, {"InstanceMemoryAllocationPercentage", memory_percent}}}};
    warm_spares_ = 1;
    start(kRanks);
    ASSERT_NO_FATAL_FAILURE(prepare_training_data());
    ASSERT_NO_FATAL_FAILURE(run_reference());
  }

  // The uninterrupted run: four ranks as processes of this host, disk tiers only.
  void run_reference() {
    std::string script =
        "set -e; pids=; for r in 0 1 2 3; do SLURM_JOB_ID=1 SLURM_PROCID=$r SLURM_NTASKS=4 "
        "ENDURE_COMM_ADDRESS=127.0.0.1 timeout 300 " +
        (bin_dir() / "endure-train").string() + " --data " + (fsx_ / "data").string() + " " +
        tiered_trainer_flags() + " --ckpt-cluster off --ckpt-dir " + (fsx_ / "reference").string() +
        " >/dev/null & pids=\"$pids $!\"; done; for p in $pids; do wait $p; done";
    ASSERT_EQ(std::system(("bash -c '" + script + "'").c_str()), 0);
  }

  // The training job: its step under srun --auto-resume=1, which re-runs it after a node
  // fault; a step that failed on healthy nodes (a trainer killed) is run again by the
  // script, as a user's job script would.
  long long submit_training() {
    return job_ = submit_script(
        "train.sbatch",
        "#!/bin/bash\n#SBATCH -N4 --output=/fsx/train-%j.out --open-mode=append\n"
        "for try in 1 2 3 4 5; do\n"
        "  srun --auto-resume=1 -N4 --ntasks-per-node=1 /opt/endure/bin/endure-train --data /fsx/data " +
            tiered_trainer_flags() +
            " --ckpt-cluster on --ckpt-dir /fsx/ckpt --log /fsx/train.jsonl >/dev/null\n"
            "  rc=$?; echo \"srun rc=$rc\"; [ $rc = 0 ] && break\n"
            "done\n");
  }

  std::vector<TieredTry> tries() {
    std::vector<TieredTry> out;
    for (const auto& j : json_lines(fsx_ / "train.jsonl")) {
      if (j.value("start", false)) out.push_back({j, {}, {}, {}});
      if (out.empty()) continue;
      if (j.contains("restored")) out.back().restored = j;
      if (j.contains("restore_fell_back")) out.back().fell_back.push_back(j["restore_fell_back"]);
      if (j.contains("loss")) out.back().losses[j["step"]] = j["loss"];
    }
    return out;
  }

  // Waits for the `n`-th try to have made `steps` steps past where it started.
  bool wait_try(size_t n, int64_t steps) {
    return wait_until(
        [&] {
          auto t = tries();
          return t.size() >= n && !t[n - 1].losses.empty() && t[n - 1].last() >= t[n - 1].resumed_from() + steps;
        },
        180s);
  }

  long long job_ = 0;

  // The trainer's log, and the job's output (srun's and every rank's stderr).
  std::string log_text() {
    return read_text(fsx_ / "train.jsonl") + "\n--- the job's output:\n" +
           read_text(fsx_ / ("train-" + std::to_string(job_) + ".out"));
  }

  // The pid of the job's endure-train on `node`: of the processes Slurm lists for the job
  // there, the one that runs it.
  std::string trainer_pid(long long job, const std::string& node) {
    auto out = e_->exec(name_, node,
                        "for p in $(scontrol listpids " + std::to_string(job) +
                            " | awk 'NR>1{print $1}'); do [ \"$(cat /proc/$p/comm 2>/dev/null)\" = endure-train ] "
                            "&& echo $p; done");
    return out.out.substr(0, out.out.find('\n'));
  }

  void signal_trainer(const std::string& node, const std::string& pid, int sig) {
    ASSERT_FALSE(pid.empty()) << "no endure-train on " << node;
    auto out = e_->exec(name_, node, "kill -" + std::to_string(sig) + " " + pid);
    ASSERT_EQ(out.exit_code, 0) << out.err;
  }

  // The node's memory store arena as this host sees it (local nodes share its /dev/shm).
  std::filesystem::path arena(const std::string& node) {
    return std::filesystem::path("/dev/shm") / ("endure-memstore-" + nodes_by_name(*e_, name_)[node].id);
  }

  // Every copy of rank r's shard in the node's store, one a step.
  std::vector<std::filesystem::path> copies(const std::string& node, int r) {
    char shard[32];
    std::snprintf(shard, sizeof shard, "rank-%05d.shard", r);
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(arena(node), ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->path().filename() == shard) out.push_back(it->path());
    return out;
  }

  // The node other than rank r's own that holds copies of its shard: its replica's.
  std::string replica_node(int r) {
    for (int n = 0; n < kRanks; ++n) {
      const std::string node = "worker-" + std::to_string(n);
      if (n != r && !copies(node, r).empty()) return node;
    }
    return "";
  }

  // The store of `node` where the job's ranks reach it (the address its cluster's
  // /etc/hosts gives), and the cluster's credential.
  std::pair<ckpt::StoreAddress, std::string> store_of(const std::string& node) {
    json config = memory_store_of(*e_, name_, node);
    if (!config.is_object()) return {};
    return {{node, address_of(*e_, name_, node), config.value("Port", 0)}, config.value("Token", std::string())};
  }

  // The pid of the memory store the agent of `node` runs.
  std::string store_pid(const std::string& node) {
    auto out = e_->exec(name_, node, "cat /opt/endure/memstore.pid");
    return out.exit_code == 0 ? out.out.substr(0, out.out.find('\n')) : "";
  }

  // Every rank's final shard and the manifest's metadata, against the uninterrupted run.
  void expect_final_shards_equal() {
    char step_dir[32];
    std::snprintf(step_dir, sizeof step_dir, "step-%012d", kTieredSteps);
    for (int r = 0; r < kRanks; ++r) {
      char shard[32];
      std::snprintf(shard, sizeof shard, "rank-%05d.shard", r);
      const std::string want = read_text(fsx_ / "reference" / step_dir / shard);
      ASSERT_FALSE(want.empty()) << step_dir << "/" << shard;
      EXPECT_TRUE(read_text(fsx_ / "ckpt" / step_dir / shard) == want)
          << "rank " << r << "'s final parameters and AdamW state differ from the uninterrupted run's";
    }
  }

  // Every step made twice has the loss it had the first time.
  void expect_same_losses() {
    std::map<int64_t, double> seen;
    for (const auto& t : tries())
      for (const auto& [step, loss] : t.losses) {
        if (seen.count(step)) {
          EXPECT_EQ(loss, seen[step]) << "step " << step;
        }
        seen[step] = loss;
      }
    EXPECT_EQ(seen.rbegin()->first, kTieredSteps);
  }
};

// Three faults in one job: the trainer of rank 1 killed on its healthy node, rank 3's own
// copies damaged before its trainer is killed, and rank 2's node crashed.
TEST_F(Checkpointless, EachFaultRestoresFromTheNearestGoodCopyAndLosesAtMostTheStepInFlight) {
  ASSERT_NO_FATAL_FAILURE(start_tiered());
  const long long job = submit_training();
  ASSERT_GT(job, 0);
  ASSERT_TRUE(wait_try(1, 25)) << log_text();
  ASSERT_EQ(batch_host(job), "worker-0");  // rank r on worker-r: block distribution

  // 1. The trainer alone killed: every rank from its own node's store, nothing from /fsx.
  ASSERT_NO_FATAL_FAILURE(signal_trainer("worker-1", trainer_pid(job, "worker-1"), SIGKILL));
  ASSERT_TRUE(wait_try(2, 20)) << log_text();
  auto t = tries();
  EXPECT_LE(t[0].last() - t[1].resumed_from(), 1) << log_text();
  EXPECT_GT(t[1].resumed_from() % kTieredDiskEvery, 0) << "restored a disk step: " << t[1].restored.dump();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(t[1].tier(r), "cluster own node worker-" + std::to_string(r)) << t[1].restored.dump();
  }

  // 2. One byte changed in every copy rank 3's node holds of its shard, its trainer stopped
  // first so that no newer step lands, then killed: rank 3 passes its own copy over for
  // the replica.
  const std::string pid = trainer_pid(job, "worker-3");
  ASSERT_NO_FATAL_FAILURE(signal_trainer("worker-3", pid, SIGSTOP));
  auto own = copies("worker-3", 3);
  ASSERT_FALSE(own.empty());
  for (const auto& path : own) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(std::filesystem::file_size(path) / 2));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(path) / 2));
    f.put(static_cast<char>(c ^ 0x5a));
  }
  ASSERT_NO_FATAL_FAILURE(signal_trainer("worker-3", pid, SIGKILL));
  ASSERT_TRUE(wait_try(3, 20)) << log_text();
  t = tries();
  EXPECT_LE(t[1].last() - t[2].resumed_from(), 1) << log_text();
  EXPECT_EQ(t[2].tier(3).rfind("cluster peer ", 0), 0u) << t[2].restored.dump();
  EXPECT_EQ(t[2].tier(1), "cluster own node worker-1") << t[2].restored.dump();

  // 3. Rank 2's node crashed (replaced by the warm spare, its store empty): rank 2 from its
  // replica, the others from their own nodes. Last: after a node is replaced, Slurm keeps
  // the dead step listed on it, and only srun --auto-resume's own re-run (--overlap) gets
  // a new step on it; a plain srun of the script would wait.
  const std::string replica_of_2 = replica_node(2);
  ASSERT_FALSE(replica_of_2.empty());
  ASSERT_NO_FATAL_FAILURE(crash("worker-2"));
  ASSERT_TRUE(wait_job_end(job, 300s)) << log_text();
  t = tries();
  ASSERT_GE(t.size(), 4u) << log_text();
  EXPECT_LE(t[2].last() - t[3].resumed_from(), 1) << log_text();
  EXPECT_EQ(t[3].tier(2), "cluster peer " + replica_of_2) << t[3].restored.dump();
  EXPECT_EQ(t[3].tier(0), "cluster own node worker-0") << t[3].restored.dump();
  // The warm spare that took worker-2's name serves its store under that name: the steps
  // after the crash were replicated to it, so they could be committed.
  EXPECT_FALSE(copies("worker-2", 2).empty()) << "no copy of rank 2 in worker-2's new store";

  EXPECT_NE(read_text(fsx_ / ("train-" + std::to_string(job) + ".out")).find("srun rc=0"), std::string::npos);
  expect_same_losses();
  ASSERT_NO_FATAL_FAILURE(expect_final_shards_equal());
}

// The store of rank 2's node killed with SIGKILL in the middle of its replication, and
// rank 2's trainer with it: the agent starts the store again (its whole objects kept, a
// half-written one dropped) and the next try restores a step every copy of which was
// whole, from memory. Then rank 1's node and the node of its replica crash at once: no
// copy of its shard is left in memory, so the ranks restore the newest step on /fsx (rank
// 1 from /fsx itself), and the log says which steps they fell back from.
TEST_F(Checkpointless, AStoreKilledMidReplicationThenTwoAdjacentNodesCrashedFallBackToTheDisk) {
  ASSERT_NO_FATAL_FAILURE(start_tiered());
  const long long job = submit_training();
  ASSERT_GT(job, 0);
  ASSERT_TRUE(wait_try(1, 25)) << log_text();
  const std::string trainer = trainer_pid(job, "worker-2");
  auto store = e_->exec(name_, "worker-2", "kill -9 $(cat /opt/endure/memstore.pid)");
  ASSERT_EQ(store.exit_code, 0) << store.err;
  ASSERT_NO_FATAL_FAILURE(signal_trainer("worker-2", trainer, SIGKILL));
  ASSERT_TRUE(wait_try(2, kTieredDiskEvery + 15)) << log_text();
  auto t = tries();
  EXPECT_LE(t[1].resumed_from(), t[0].last()) << log_text();
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(t[1].tier(r).rfind("cluster ", 0), 0u) << t[1].restored.dump();

  const std::string replica_of_1 = replica_node(1);
  ASSERT_FALSE(replica_of_1.empty());
  ASSERT_NE(replica_of_1, "worker-0");  // rank 0's node runs the batch script
  ASSERT_NO_FATAL_FAILURE(crash("worker-1"));
  ASSERT_NO_FATAL_FAILURE(crash(replica_of_1));
  ASSERT_TRUE(wait_job_end(job, 400s)) << log_text();
  t = tries();
  ASSERT_GE(t.size(), 3u) << log_text();
  EXPECT_FALSE(t[2].fell_back.empty()) << log_text();
  EXPECT_EQ(t[2].resumed_from() % kTieredDiskEvery, 0) << t[2].restored.dump();
  // Rank 1 from /fsx; the others from wherever that step is nearest (a store keeps old
  // steps while it has room).
  EXPECT_EQ(t[2].tier(1), "shared") << t[2].restored.dump();
  for (int r = 0; r < kRanks; ++r) EXPECT_FALSE(t[2].tier(r).empty()) << t[2].restored.dump();
  expect_same_losses();
  ASSERT_NO_FATAL_FAILURE(expect_final_shards_equal());
}

// Rank 1's node's store full: another run's step, which the store may not drop, holds all
// but a sliver of its share. Every copy it is sent is refused, and the log says so once; no
// step is held in memory, training goes on with /fsx, and rank 1's trainer killed restores
// the newest step on /fsx. The other run gone, the store takes copies again. Then rank 3's
// node's store is stopped and rank 2's node crashes: the re-run's restore waits on that
// store (for rank 3's own copy, rank 2's replica, and its listing) until the store is
// killed in the middle of it; the restore passes it over for the next copy and says so.
TEST_F(Checkpointless, AFullStoreLeavesTheStepsToTheDiskAndAPeerKilledMidRestoreIsPassedOver) {
  ASSERT_NO_FATAL_FAILURE(start_tiered(1));
  auto [full, token] = store_of("worker-1");
  ASSERT_GT(full.port, 0);
  ckpt::ClusterStoreClient client(token, 10);
  auto stats = client.stats(full);
  ASSERT_TRUE(stats) << stats.error().message;
  const uint64_t room = (*stats)["CapacityBytes"].get<uint64_t>() - (*stats)["UsedBytes"].get<uint64_t>();
  const uint64_t sliver = 512 << 10;  // under one shard (1.6 MB), over the small objects
  ASSERT_GT(room, sliver);
  {
    std::string filler(room - sliver, '\x5a');
    auto put = client.put(full, "other-run", 1, "rank-00000.shard", filler.data(), filler.size());
    ASSERT_TRUE(put) << put.error().message;
  }

  const long long job = submit_training();
  ASSERT_GT(job, 0);
  ASSERT_TRUE(wait_try(1, kTieredDiskEvery + 10)) << log_text();
  const std::string out_file = "train-" + std::to_string(job) + ".out";
  EXPECT_NE(read_text(fsx_ / out_file).find("rank 1's copy refused, so no step is held in memory"), std::string::npos)
      << log_text();
  ASSERT_NO_FATAL_FAILURE(signal_trainer("worker-1", trainer_pid(job, "worker-1"), SIGKILL));
  ASSERT_TRUE(wait_try(2, 5)) << log_text();
  auto t = tries();
  EXPECT_EQ(t[1].resumed_from() % kTieredDiskEvery, 0) << "a step held in memory: " << t[1].restored.dump();
  EXPECT_GE(t[1].resumed_from(), kTieredDiskEvery) << t[1].restored.dump();

  // The other run gone: the store takes copies again and steps are held in memory.
  ASSERT_TRUE(client.remove(full, "other-run"));
  ASSERT_TRUE(wait_until(
      [&] { return read_text(fsx_ / out_file).find("every store takes rank 1's copies again") != std::string::npos; },
      60s))
      << log_text();

  // Rank 3's node's store stopped, then rank 2's node crashed.
  const std::string stopped = store_pid("worker-3");
  ASSERT_FALSE(stopped.empty());
  ASSERT_EQ(replica_node(2), "worker-3");
  const std::string old_trainer = trainer_pid(job, "worker-3");
  ASSERT_EQ(e_->exec(name_, "worker-3", "kill -STOP " + stopped).exit_code, 0);
  ASSERT_NO_FATAL_FAILURE(crash("worker-2"));
  // The re-run's trainers started: their restore cannot end while the store is stopped.
  ASSERT_TRUE(wait_until(
      [&] {
        auto now = trainer_pid(job, "worker-3");
        return !now.empty() && now != old_trainer;
      },
      120s))
      << log_text();
  std::this_thread::sleep_for(2s);
  ASSERT_EQ(tries().size(), 2u) << "restored while a copy's store was stopped: " << log_text();
  ASSERT_EQ(e_->exec(name_, "worker-3", "kill -KILL " + stopped).exit_code, 0);
  ASSERT_TRUE(wait_job_end(job, 300s)) << log_text();
  t = tries();
  ASSERT_GE(t.size(), 3u) << log_text();
  for (int r = 0; r < kRanks; ++r) EXPECT_FALSE(t[2].tier(r).empty()) << t[2].restored.dump();
  EXPECT_NE(t[2].tier(2), "cluster own node worker-2") << t[2].restored.dump();
  EXPECT_NE(read_text(fsx_ / out_file).find("worker-3 passed over"), std::string::npos) << log_text();
  expect_same_losses();
  ASSERT_NO_FATAL_FAILURE(expect_final_shards_equal());
}

}  // namespace
}  // namespace endure::test
