// endure-comm-bench: all-reduce bus bandwidth of endure::comm beside a plain Gloo program
// (its own context, Gloo's ring all-reduce called directly), in the same processes.
//
//   endure-comm-bench --ranks N [--iters K] [--max-bytes B]
//
// Forks N ranks (processes) that meet through a Gloo file store in a fresh folder under
// /tmp, on 127.0.0.1. For each size from 4 KiB to --max-bytes (x4), each rank times K
// all-reduces of both kinds in pairs (which goes first alternating), after two pairs to warm
// up. Rank 0 prints one JSON line per size: bytes, the median seconds of each, the bus
// bandwidth of each (bytes * 2 (N-1) / N / seconds, in GB/s), and the median over the pairs
// of plain Gloo's time over endure's (paired_ratio: endure's bandwidth as a fraction of
// Gloo's, robust to the slow moments of ranks that share cores). Exit status 0, or 1 when a
// rank failed.
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "endure/comm.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void sum_floats(void* out, const void* a, const void* b, size_t n) {
  gloo::sum<float>(out, a, b, n);
}

int run_rank(int rank, int ranks, const std::string& dir, int iters, size_t max_bytes) {
  auto store = endure::comm::file_store(dir);
  if (!store.ok()) return 1;
  endure::comm::Options o;
  o.rank = rank;
  o.world = ranks;
  o.key = "endure";
  o.timeout = std::chrono::seconds(60);
  auto comm = endure::comm::connect(o, *store);
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, comm.error().message.c_str());
    return 1;
  }
  // The plain program: a Gloo context of its own over the same kind of store.
  gloo::rendezvous::FileStore file(dir);
  gloo::rendezvous::PrefixStore prefixed("plain", file);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto plain = std::make_shared<gloo::rendezvous::Context>(rank, ranks);
  plain->setTimeout(std::chrono::seconds(60));
  plain->connectFullMesh(prefixed, device);
  uint32_t tag = 1u << 20;
  auto gloo_allreduce = [&](float* data, size_t n) {
    gloo::AllreduceOptions opts(plain);
    opts.setOutput(data, n);
    opts.setReduceFunction(&sum_floats);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(tag++);
    gloo::allreduce(opts);
  };
  for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    size_t n = bytes / sizeof(float);
    std::vector<float> data(n, 1.0f);
    std::vector<double> ours, theirs;
    std::vector<double> paired;  // plain Gloo's time over endure's, one pair at a time
    for (int i = 0; i < iters + 2; ++i) {
      // Each pair runs back to back, and which goes first alternates: on a machine whose
      // ranks share cores, a slow moment then touches both sides of a pair alike.
      double times[2];
      for (int k = 0; k < 2; ++k) {
        const bool endure_turn = (k == 0) == (i % 2 == 0);
        auto t0 = Clock::now();
        if (endure_turn) {
          if (!(*comm)->all_reduce(data.data(), n).ok()) return 1;
        } else {
          gloo_allreduce(data.data(), n);
        }
        times[endure_turn ? 0 : 1] = std::chrono::duration<double>(Clock::now() - t0).count();
        std::fill(data.begin(), data.end(), 1.0f);  // no overflow to inf across iterations
      }
      if (i < 2) continue;
      ours.push_back(times[0]);
      theirs.push_back(times[1]);
      paired.push_back(times[1] / times[0]);
    }
    if (rank == 0) {
      double a = median(ours), b = median(theirs);
      double factor = 2.0 * (ranks - 1) / ranks;
      std::printf(
          "{\"ranks\":%d,\"bytes\":%zu,\"endure_s\":%.6g,\"gloo_s\":%.6g,"
          "\"endure_busbw_gbs\":%.4g,\"gloo_busbw_gbs\":%.4g,\"paired_ratio\":%.4g}\n",
          ranks, bytes, a, b, bytes * factor / a / 1e9, bytes * factor / b / 1e9, median(paired));
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"all-reduce bus bandwidth: endure::comm beside plain Gloo"};
  int ranks = 2, iters = 20;
  size_t max_bytes = 64u << 20;
  app.add_option("--ranks", ranks, "ranks (processes), 2 or more")->required()->check(CLI::Range(2, 64));
  app.add_option("--iters", iters, "timed all-reduces of each kind per size")->check(CLI::Range(1, 10000));
  app.add_option("--max-bytes", max_bytes, "the largest size (from 4 KiB, x4)")
      ->check(CLI::Range(size_t{4096}, size_t{1} << 30));
  CLI11_PARSE(app, argc, argv);

  char tmpl[] = "/tmp/endure-comm-bench-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    std::perror("endure-comm-bench: mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(run_rank(r, ranks, dir, iters, max_bytes));
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (failed) std::fprintf(stderr, "endure-comm-bench: %d rank(s) failed\n", failed);
  return failed ? 1 : 0;
}
