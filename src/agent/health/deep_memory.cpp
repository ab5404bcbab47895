// The memory test: patterns written over a buffer and read back word by word, then the
// copy bandwidth between its two halves.
#include <fmt/format.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <optional>

#include "agent/health/deep.h"

namespace endure::agent::health {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kRandomSeed = 0x6a09e667f3bcc908ULL;
constexpr int kCopyRepeats = 4;

// Tells the compiler that the buffer is read and written behind its back, so that it
// neither drops the writes nor answers the reads from what it wrote.
void clobber(void* p) { asm volatile("" : : "r"(p) : "memory"); }

struct PatternErrors {
  long count = 0;
  std::optional<std::string> first;
};

// Writes the pattern into every word, then reads every word back against it. make_values()
// gives a fresh callable that returns word i's value when called for i = 0, 1, ... in turn.
template <typename MakeValues>
void run_pattern(std::uint64_t* words, std::size_t n, const std::string& name,
                 MakeValues make_values, PatternErrors& errors) {
  auto write_value = make_values();
  for (std::size_t i = 0; i < n; ++i) words[i] = write_value(i);
  clobber(words);
  auto read_value = make_values();
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t want = read_value(i);
    if (words[i] == want) continue;
    if (++errors.count == 1) {
      errors.first = fmt::format("{}: word {} (offset {:#x}) read {:#018x}, expected {:#018x}",
                                 name, i, i * sizeof(std::uint64_t), words[i], want);
    }
  }
}

void run_patterns(std::uint64_t* words, std::size_t n, PatternErrors& errors) {
  run_pattern(
      words, n, "walking ones",
      [] { return [](std::size_t i) { return std::uint64_t{1} << (i % 64); }; }, errors);
  run_pattern(
      words, n, "address in word",
      [] { return [](std::size_t i) { return static_cast<std::uint64_t>(i); }; }, errors);
  run_pattern(
      words, n, fmt::format("random (seed {:#x})", kRandomSeed),
      [] { return [state = kRandomSeed](std::size_t) mutable { return splitmix64(state); }; },
      errors);
}

// Copies the first half onto the second kCopyRepeats times. GB/s counts the bytes copied
// (one half a repeat), not the bytes read plus written, which would be twice as many.
double copy_gbps(std::uint64_t* words, std::size_t n) {
  std::size_t half_bytes = n / 2 * sizeof(std::uint64_t);
  if (half_bytes == 0) return 0.0;
  auto* from = reinterpret_cast<unsigned char*>(words);
  unsigned char* to = from + half_bytes;
  auto start = Clock::now();
  for (int r = 0; r < kCopyRepeats; ++r) {
    ::memcpy(to, from, half_bytes);
    clobber(words);
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (seconds <= 0) return 0.0;
  return static_cast<double>(half_bytes) * kCopyRepeats / seconds / 1e9;
}

DeepResult run_memory_check(const DeepCheckOptions& options) {
  DeepResult result;
  result.check = "memory";
  long mib = std::max(1L, options.memory_mib);
  result.metrics = {{"errors", 0}, {"copy_gbps", 0.0}, {"mib", mib}};

  std::size_t n = static_cast<std::size_t>(mib) * 1024 * 1024 / sizeof(std::uint64_t);
  std::unique_ptr<std::uint64_t[]> buffer(new (std::nothrow) std::uint64_t[n]);
  if (!buffer) {
    result.detail = fmt::format("cannot allocate {} MiB", mib);
    return result;
  }
  std::uint64_t* words = buffer.get();
  ::memset(words, 0, n * sizeof(std::uint64_t));  // touch every page once
  clobber(words);

  PatternErrors errors;
  run_patterns(words, n, errors);
  double gbps = copy_gbps(words, n);
  buffer.reset();

  result.metrics["errors"] = errors.count;
  result.metrics["copy_gbps"] = gbps;
  if (errors.count > 0) {
    result.detail = fmt::format("{} words wrong in {} MiB; first: {}", errors.count, mib,
                                errors.first.value_or("?"));
    return result;
  }
  if (gbps < options.min_memory_gbps) {
    result.detail = fmt::format(
        "patterns verified in {} MiB, but copy bandwidth {:.2f} GB/s is "
        "below the minimum {:g} GB/s",
        mib, gbps, options.min_memory_gbps);
    return result;
  }
  result.passed = true;
  result.detail =
      fmt::format("3 patterns verified in {} MiB, copy bandwidth {:.2f} GB/s", mib, gbps);
  return result;
}

}  // namespace

DeepResult memory_check(const DeepCheckOptions& options) {
  return guarded_check("memory", [&] { return run_memory_check(options); });
}

}  // namespace endure::agent::health
