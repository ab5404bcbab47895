// What the auto-resume integration tests share: a cluster whose jobs run through
// srun --auto-resume=1, and helpers that submit them, make faults and read their progress.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cluster_fixture.h"
#include "support/text_files.h"

namespace endure::test {

inline constexpr int kRanks = 4;

// The cluster's shared folder as the host sees it (every node's /fsx).
inline std::filesystem::path fsx_on_host(Endured& e, const std::string& cluster) {
  auto d = e.call("DescribeCluster", {{"ClusterName", cluster}});
  std::string arn = d ? (*d)["ClusterArn"].get<std::string>() : "";
  return e.home() / "clusters" / arn.substr(arn.rfind('/') + 1) / "fsx";
}

inline std::vector<int> done_units(const std::filesystem::path& dir, int rank) {
  std::vector<int> out;
  std::ifstream in(dir / ("done-" + std::to_string(rank) + ".log"));
  int u;
  while (in >> u) out.push_back(u);
  return out;
}

class AutoResume : public ClusterFixture {
 protected:
  void start(int workers, const json& config = json::object()) {
    start_cluster("it-resume", workers, "Automatic", config);
    fsx_ = fsx_on_host(*e_, name_);
    std::filesystem::copy_file(source_dir() / "tests/integration/jobs/units.py", fsx_ / "units.py");
  }

  // A small corpus and its tokens on /fsx/data, for endure-train's jobs.
  void prepare_training_data() {
    const std::string data_bin = (bin_dir() / "endure-data").string();
    ASSERT_EQ(std::system((data_bin + " sample --out " + (fsx_ / "s.jsonl").string() +
                           " --bytes 300k --seed 2 >/dev/null")
                              .c_str()),
              0);
    ASSERT_EQ(
        std::system((data_bin + " prepare --input " + (fsx_ / "s.jsonl").string() +
                     " --vocab-size 512 --out " + (fsx_ / "data").string() + " --seed 2 >/dev/null")
                        .c_str()),
        0);
  }

  // Writes `script` to /fsx/<file> and submits it from the controller; returns the job's
  // id (0 when sbatch refused it).
  long long submit_script(const std::string& file, const std::string& script) {
    std::ofstream(fsx_ / file) << script;
    auto out = e_->exec(name_, "controller-0", "sbatch --parsable /fsx/" + file);
    EXPECT_EQ(out.exit_code, 0) << out.err;
    return std::atoll(out.out.c_str());
  }

  // Submits the units job (units.py on every node through srun --auto-resume=1) and
  // returns its id.
  long long submit(int units, const std::string& worker_args = "", int nodes = kRanks) {
    return submit_units("units", "run", nodes, units, worker_args);
  }

  // The units job as /fsx/<name>.sbatch, its progress in /fsx/<dir>, its output in
  // /fsx/<name>-<job>.out; sbatch_args choose its nodes.
  long long submit_units(const std::string& name, const std::string& dir, int nodes, int units,
                         const std::string& worker_args, const std::string& sbatch_args = "") {
    std::filesystem::create_directories(fsx_ / dir);
    const std::string n = std::to_string(nodes);
    return submit_script(name + ".sbatch", "#!/bin/bash\n#SBATCH -N" + n + " " + sbatch_args +
                                               " --output=/fsx/" + name + "-%j.out\n" +
                                               "srun --auto-resume=1 -N" + n +
                                               " python3 /fsx/units.py --dir /fsx/" + dir +
                                               " --units " + std::to_string(units) + " " +
                                               worker_args + "\n" + "echo \"srun rc=$?\"\n");
  }

  // Crashes the node (a real fault, through inject-fault).
  void crash(const std::string& node) {
    auto out = e_->cli(
        {"debug", "inject-fault", "--cluster-name", name_, "--node", node, "--kind", "crash"});
    ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  }

  // The node that runs the job's batch script.
  std::string batch_host(long long job) {
    auto out =
        e_->exec(name_, "controller-0", "squeue -h -j " + std::to_string(job) + " -O BatchHost");
    return out.out.substr(0, out.out.find_first_of(" \n"));
  }

  // Slurm's state of an ended job (kept for MinJobAge after its end).
  std::string job_state(long long job) {
    auto out = e_->exec(name_, "controller-0", "scontrol show job -o " + std::to_string(job));
    auto at = out.out.find("JobState=");
    return at == std::string::npos ? "" : out.out.substr(at + 9, out.out.find(' ', at) - at - 9);
  }

  // A cluster of kRanks workers running the units job, every rank past its second unit.
  void start_running_job(int units, long long* job) {
    start(kRanks);
    *job = submit(units);
    ASSERT_GT(*job, 0);
    ASSERT_TRUE(wait_progress(2)) << job_output(*job);
  }

  // Waits until every rank has done at least `units` units.
  bool wait_progress(size_t units, std::chrono::seconds timeout = 60s) {
    return wait_until(
        [&] {
          for (int r = 0; r < kRanks; ++r) {
            if (done_units(fsx_ / "run", r).size() < units) return false;
          }
          return true;
        },
        timeout);
  }

  bool wait_job_end(long long job, std::chrono::seconds timeout = 180s) {
    return wait_until(
        [&] {
          auto out =
              e_->exec(name_, "controller-0", "squeue -h -j " + std::to_string(job) + " -o %T");
          return out.exit_code == 0 && out.out.empty();
        },
        timeout);
  }

  std::string job_output(long long job, const std::string& name = "units") {
    return read_text(fsx_ / (name + "-" + std::to_string(job) + ".out"));
  }

  json status(long long job) {
    auto r = e_->call("AutoResumeStatus", {{"ClusterName", name_}, {"JobId", job}});
    return r ? *r : json{{"error", r.error().message}};
  }

  // The job ended well with its step re-run `resumes` times: srun rc 0, the resumes counted,
  // every rank restarted once per resume, every unit done (bar those in flight at a fault).
  void expect_ended_well(long long job, int units, int resumes) {
    std::string output = job_output(job);
    EXPECT_NE(output.find("srun rc=0"), std::string::npos) << output;
    auto st = status(job);
    EXPECT_EQ(st["ResumeCount"], resumes) << st.dump();
    int reruns = 0;
    for (const auto& s : json_lines(fsx_ / "run" / "starts.log")) reruns += s["count"] >= 1;
    EXPECT_EQ(reruns, kRanks * resumes) << output;
    expect_units_done_once_past_checkpoints(units, resumes);
  }

  // Every unit done, none more than twice, at most one redone unit per rank and fault.
  void expect_units_done_once_past_checkpoints(int units, int faults) {
    std::multiset<int> all;
    for (int r = 0; r < kRanks; ++r) {
      auto done = done_units(fsx_ / "run", r);
      std::set<int> distinct(done.begin(), done.end());
      EXPECT_LE(done.size() - distinct.size(), static_cast<size_t>(faults))
          << "rank " << r << " redid more than the unit in flight at the fault";
      all.insert(done.begin(), done.end());
    }
    for (int u = 0; u < units; ++u) {
      EXPECT_GE(all.count(u), 1u) << "unit " << u << " never done";
      EXPECT_LE(all.count(u), static_cast<size_t>(1 + faults)) << "unit " << u;
    }
  }

  std::filesystem::path fsx_;
};

}  // namespace endure::test
