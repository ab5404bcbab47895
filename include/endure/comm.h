// endure's collectives among the ranks of a job: all-reduce, reduce-scatter, all-gather,
// broadcast and barrier. Every call is bounded by the communicator's timeout: a peer that
// died or never came turns into an error (CommTimeout or CommPeerLost), never a hang, so
// that the trainer exits and srun --auto-resume=1 re-runs the step.
//
// One interface, backends behind it: Gloo over TCP (connect() below) today; a NCCL backend
// implements the same class. Sums are deterministic: for a given world size every call
// adds the ranks' values in the same order, so two runs produce the same bytes.
//
// Rendezvous goes through a store no single compute node holds: a folder on the shared
// file system (/fsx) for ranks on nodes, or one in-memory store for ranks that are threads
// of one process (tests). Each rendezvous has its own key in the store (rendezvous_key()
// makes it from Slurm's environment: job, step and try), so a re-run meets none of the
// previous try's state.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace endure::comm {

// The elements of a count-element buffer that rank `rank` of `world` holds in a
// reduce-scatter or all-gather: contiguous, in rank order, the first count % world ranks
// one element more.
struct Range {
  std::size_t offset = 0;
  std::size_t count = 0;
};
Range shard_range(std::size_t count, int world, int rank);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;

  // data (count floats) becomes the sum over every rank's data, on every rank.
  virtual Status all_reduce(float* data, std::size_t count) = 0;
  // out (counts[rank] floats) becomes this rank's part of the sum over every rank's data:
  // the parts lie back to back in data in rank order (counts[k] floats each, some may be
  // 0) and sum to data's length. data is the working buffer: after the call it holds
  // partial sums. Each rank sends (world-1)/world of the bytes, half an all-reduce's.
  virtual Status reduce_scatter_v(float* data, const std::vector<std::size_t>& counts,
                                  float* out) = 0;
  // out (the counts together) becomes every rank's part, back to back in rank order;
  // shard holds this rank's part (counts[rank] floats): elsewhere, or already in its place
  // in out (in place).
  virtual Status all_gather_v(const float* shard, const std::vector<std::size_t>& counts,
                              float* out) = 0;
  // The same with the parts of shard_range(count, world, k).
  Status reduce_scatter(float* data, std::size_t count, float* out);
  Status all_gather(const float* shard, std::size_t count, float* out);
  // data (bytes) becomes root's data on every rank.
  virtual Status broadcast(void* data, std::size_t bytes, int root) = 0;
  // Returns once every rank has called it.
  virtual Status barrier() = 0;
};

// Where the ranks of a rendezvous find each other.
class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;
};
// A folder every rank sees (a job's folder on /fsx); made when missing.
Result<std::shared_ptr<RendezvousStore>> file_store(const std::filesystem::path& dir);
// One store in this process's memory, for ranks that are its threads.
std::shared_ptr<RendezvousStore> memory_store();

struct Options {
  int rank = 0;
  int world = 1;
  std::string key;                           // this rendezvous's name in the store (rendezvous_key)
  std::string address = "127.0.0.1";         // the address this rank listens on for its peers
  std::chrono::milliseconds timeout{30000};  // every collective, and the rendezvous
};

// Meets the other world-1 ranks under options.key and connects to each (Gloo's full mesh
// over TCP). Errors: CommTimeout when a rank does not come within the timeout,
// InvalidArgument for a rank outside the world or an empty key. The first call makes the
// process ignore SIGPIPE, so that a write to a dead peer fails the collective (EPIPE)
// instead of ending the process.
Result<std::unique_ptr<Communicator>> connect(const Options& options,
                                              std::shared_ptr<RendezvousStore> store);

// The rendezvous key of a step from Slurm's environment: job, step, Slurm's restart count
// (a requeued job) and srun --auto-resume's try (ENDURE_AUTO_RESUME_COUNT), e.g.
// "job-42.step-0.restart-0.try-1". InvalidArgument names a missing SLURM_JOB_ID.
Result<std::string> rendezvous_key(const std::map<std::string, std::string>& env);

}  // namespace endure::comm
