// Deep health checks, run on demand (start-cluster-health-check) while the node sits in a
// Slurm maintenance reservation: each stresses one part of the machine against a known
// answer or a threshold from the instance type.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/node_contract.h"
#include "common/json.h"

namespace endure::agent::health {

struct DeepCheckOptions {
  std::string local_path = node::kLocalDiskPath;
  double cpu_seconds = 2.0;      // length of the compute burn
  int cpu_threads = 1;           // threads burning (the instance type's CPUs)
  long memory_mib = 256;         // buffer for the bandwidth and pattern test
  double min_memory_gbps = 1.0;  // copy bandwidth below this fails
  long disk_mib = 128;           // bytes written, synced, read back and verified
  double min_disk_mbps = 20.0;   // write or read bandwidth below this fails
  double network_seconds = 2.0;
  double min_network_mbps = 100.0;
};

struct DeepResult {
  std::string check;  // cpu, memory, disk, network
  bool passed = false;
  std::string detail;  // for people
  json metrics = json::object();
  json to_json() const;  // {"Check", "Passed", "Detail", "Metrics"}
};

// Every check returns within a few seconds of its configured duration (cpu_seconds,
// network_seconds) or, for memory and disk, of the time its minimum bandwidth allows; none
// throws. Units: MiB sizes, MB/s and GB/s in powers of ten (1e6 and 1e9 bytes a second).

// CPU: every thread computes a fixed workload whose answer is known; a wrong answer
// fails (a flaky core), and so does no progress. Metrics: iterations per second.
DeepResult cpu_check(const DeepCheckOptions& options);
// Memory: fills a buffer with patterns (walking ones, address-in-word, random with a
// seed) and verifies every word; measures copy bandwidth. Metrics: GB/s, errors.
DeepResult memory_check(const DeepCheckOptions& options);
// Disk: writes a file of pseudo-random blocks in local_path, fsyncs, drops it from the
// page cache (posix_fadvise DONTNEED), reads it back and verifies a checksum of every
// block. Metrics: write and read MB/s.
DeepResult disk_check(const DeepCheckOptions& options);

// The network test: a peer's server accepts one TCP connection at a time and reads (and
// discards) what is sent; the client sends for network_seconds and measures MB/s.
class BandwidthServer {
 public:
  BandwidthServer() = default;
  ~BandwidthServer();
  // Listens on address:port (the node's own address). False when it cannot bind.
  bool start(const std::string& address, int port);
  void stop();

 private:
  int fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

DeepResult network_check(const std::string& peer_address, int port,
                         const DeepCheckOptions& options);

// Building blocks the checks' files share, here so that tests pin their answers.
// SplitMix64 (Steele, Lea and Flood): advances state and returns the next value; the same
// seed gives the same stream on every machine.
std::uint64_t splitmix64(std::uint64_t& state);
// 64-bit FNV-1a of size bytes: the disk check's per-block checksum.
std::uint64_t fnv1a64(const void* data, std::size_t size);
// Runs body; an exception it throws becomes a failed result for check, with its text.
DeepResult guarded_check(const std::string& check, const std::function<DeepResult()>& body);

}  // namespace endure::agent::health
