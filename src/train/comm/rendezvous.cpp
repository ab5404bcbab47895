// The backend-independent parts of endure::comm: how a buffer is split among ranks (and the
// even collectives on top of the uneven ones), and a step's rendezvous key.
#include <fmt/format.h>

#include <algorithm>

#include "endure/comm.h"

namespace endure::comm {

Range shard_range(std::size_t count, int world, int rank) {
  const std::size_t w = static_cast<std::size_t>(world), r = static_cast<std::size_t>(rank);
  const std::size_t base = count / w, extra = count % w;
  return {r * base + std::min(r, extra), base + (r < extra ? 1 : 0)};
}

namespace {
std::vector<std::size_t> even_counts(std::size_t count, int world) {
  std::vector<std::size_t> counts;
  for (int k = 0; k < world; ++k) counts.push_back(shard_range(count, world, k).count);
  return counts;
}
}  // namespace

Status Communicator::reduce_scatter(float* data, std::size_t count, float* out) {
  return reduce_scatter_v(data, even_counts(count, world()), out);
}

Status Communicator::all_gather(const float* shard, std::size_t count, float* out) {
  return all_gather_v(shard, even_counts(count, world()), out);
}

Result<std::string> rendezvous_key(const std::map<std::string, std::string>& env) {
  auto get = [&](const char* name, const char* fallback) {
    auto it = env.find(name);
    return it == env.end() || it->second.empty() ? std::string(fallback) : it->second;
  };
  std::string job = get("SLURM_JOB_ID", "");
  if (job.empty())
    return make_error("InvalidArgument", "SLURM_JOB_ID is not set: not in a Slurm job");
  return fmt::format("job-{}.step-{}.restart-{}.try-{}", job, get("SLURM_STEP_ID", "0"),
                     get("SLURM_RESTART_COUNT", "0"), get("ENDURE_AUTO_RESUME_COUNT", "0"));
}

}  // namespace endure::comm
