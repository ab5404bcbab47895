// The CPU burn: threads, one per usable CPU where they fit, repeat a batch whose answer the
// calling thread worked out first; a core that ever answers differently is flaky.
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <mutex>
#include <optional>

#include "agent/health/deep.h"

namespace endure::agent::health {

namespace {

using Clock = std::chrono::steady_clock;

constexpr long kBatchIterations = 1L << 16;  // about a quarter of a millisecond
constexpr int kMaxThreads = 4096;
constexpr std::array<std::uint64_t, 4> kSeeds = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL,
                                                 0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};

// One batch: an integer LCG with a xorshift and a chaotic float recurrence (the logistic
// map), folded together, so one wrong bit in either unit changes the answer. Not inlined,
// so that the expected answer and every thread's run the same instructions.
[[gnu::noinline]] std::uint64_t cpu_batch(std::uint64_t seed) {
  std::uint64_t h = seed;
  double x = 0.25 + static_cast<double>(seed % 1024) / 2048.0;  // in (0, 1)
  for (long i = 0; i < kBatchIterations; ++i) {
    h = h * 6364136223846793005ULL + 1442695040888963407ULL;
    h ^= h >> 29;
    x = 3.99 * x * (1.0 - x);
    h += std::bit_cast<std::uint64_t>(x);
  }
  return h;
}

// The CPUs this process may run on, so thread t can be pinned to the t-th of them.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// Best effort: an unpinned thread still tests some core.
void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set);
}

struct Burn {
  std::array<std::uint64_t, kSeeds.size()> expected{};
  Clock::time_point deadline;
  std::atomic<bool> stop{false};
  std::atomic<long> batches{0};
  std::atomic<long> mismatches{0};
  std::mutex first_mismatch_mutex;
  std::optional<std::string> first_mismatch;
};

// Runs batches until the deadline (at least one), each checked against its answer.
void burn(Burn& b, int index, std::optional<int> cpu, long& my_batches) {
  if (cpu) pin_to(*cpu);
  std::size_t k = static_cast<std::size_t>(index) % kSeeds.size();
  do {
    std::uint64_t got = cpu_batch(kSeeds[k]);
    if (got != b.expected[k]) {
      b.mismatches.fetch_add(1);
      std::lock_guard lock(b.first_mismatch_mutex);
      if (!b.first_mismatch) {
        b.first_mismatch = fmt::format("core {} computed {:#018x}, expected {:#018x}",
                                       ::sched_getcpu(), got, b.expected[k]);
      }
    }
    ++my_batches;
    b.batches.fetch_add(1, std::memory_order_relaxed);
    k = (k + 1) % kSeeds.size();
  } while (!b.stop.load(std::memory_order_relaxed) && Clock::now() < b.deadline);
}

DeepResult run_cpu_check(const DeepCheckOptions& options) {
  DeepResult result;
  result.check = "cpu";
  int threads = std::clamp(options.cpu_threads, 1, kMaxThreads);
  result.metrics = {{"iterations_per_second", 0.0}, {"threads", threads}, {"mismatches", 0}};

  Burn b;
  for (std::size_t k = 0; k < kSeeds.size(); ++k) b.expected[k] = cpu_batch(kSeeds[k]);
  std::vector<int> cpus = allowed_cpus();
  bool pin = threads <= static_cast<int>(cpus.size());

  auto start = Clock::now();
  b.deadline = start + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(std::max(0.0, options.cpu_seconds)));
  std::vector<long> per_thread(static_cast<std::size_t>(threads), 0);
  std::vector<std::thread> workers;
  std::string start_error;
  try {
    for (int t = 0; t < threads; ++t) {
      std::optional<int> cpu;
      if (pin) cpu = cpus[static_cast<std::size_t>(t)];
      workers.emplace_back(burn, std::ref(b), t, cpu, std::ref(per_thread[t]));
    }
  } catch (const std::exception& e) {
    b.stop = true;
    start_error = fmt::format("started {} of {} threads: {}", workers.size(), threads, e.what());
  }
  for (auto& w : workers) w.join();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  long iterations = b.batches.load() * kBatchIterations;
  double per_second = seconds > 0 ? static_cast<double>(iterations) / seconds : 0.0;
  long mismatches = b.mismatches.load();
  result.metrics["iterations_per_second"] = per_second;
  result.metrics["mismatches"] = mismatches;
  if (!start_error.empty()) {
    result.detail = start_error;
    return result;
  }
  if (mismatches > 0) {
    result.detail = fmt::format("{} of {} batches wrong; first: {}", mismatches, b.batches.load(),
                                b.first_mismatch.value_or("?"));
    return result;
  }
  auto idle = std::find(per_thread.begin(), per_thread.end(), 0L);
  if (idle != per_thread.end()) {
    result.detail = fmt::format("thread {} finished no batch", idle - per_thread.begin());
    return result;
  }
  result.passed = true;
  result.detail = fmt::format("{} threads for {:.1f} s, {:.3g} iterations/s, every batch right",
                              threads, seconds, per_second);
  return result;
}

}  // namespace

DeepResult cpu_check(const DeepCheckOptions& options) {
  return guarded_check("cpu", [&] { return run_cpu_check(options); });
}

}  // namespace endure::agent::health
