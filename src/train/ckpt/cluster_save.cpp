// The checkpoint engine's side of the cluster memory tier: opening it from a checkpointer's
// options, and a save's part in it. The tier itself is cluster_tier.h.
#include <fmt/format.h>

#include "common/log.h"
#include "train/ckpt/checkpointer_impl.h"
#include "train/ckpt/format.h"
#include "train/ckpt/tiers.h"

namespace endure::ckpt {

Result<std::unique_ptr<ClusterTier>> open_cluster_tier(const Options& o) {
  if (static_cast<int>(o.cluster_rank_nodes.size()) != o.world)
    return invalid(fmt::format("cluster_rank_nodes: one node a rank ({}), not {}", o.world,
                               o.cluster_rank_nodes.size()));
  if (o.cluster_replicas < 0) return invalid("cluster_replicas: must not be negative");
  if (!(o.cluster_commit_timeout_seconds > 0)) return invalid("cluster_commit_timeout_seconds: must be above 0");
  ClusterTierFiles files = ClusterTierFiles::node();
  if (!o.cluster_config_dir.empty())
    files = {o.cluster_config_dir / files.memory_store.filename(),
             o.cluster_config_dir / files.resource_config.filename(), o.cluster_config_dir / "hosts"};
  std::vector<std::string> job_nodes = o.cluster_rank_nodes;
  std::sort(job_nodes.begin(), job_nodes.end());
  job_nodes.erase(std::unique(job_nodes.begin(), job_nodes.end()), job_nodes.end());
  auto config = load_cluster_tier(o.cluster_node, job_nodes, files);
  if (!config) return config.error();
  // The run's name in the stores: its shared folder's, so that a re-run of the job (or
  // another job resuming the same folder) finds the steps, and no other run's.
  std::string owner = owner_of(o);
  std::string run = "run-" + checksum_hex(owner.data(), owner.size());
  ClusterTier::Options t{std::move(*config), run, o.rank, o.world, o.cluster_rank_nodes, o.cluster_replicas, 30};
  return std::make_unique<ClusterTier>(std::move(t));
}

void persist_cluster(const Options& o, ClusterTier& tier, int64_t step, const json& user,
                     const json& layout, const StagingSlot& slot, const std::vector<std::string>& chunks) {
  auto held = tier.save(step, slot.data(), slot.size(), descriptor(o, step, slot.size(), chunks, layout, user));
  if (!held) {
    // A refusal of every copy the tier has said already (ClusterTier::save).
    if (held.error().code != "NoCopy")
      log::warn("checkpoint step {}: cluster memory tier: {}", step, held.error().message);
    return;
  }
  if (o.rank != 0) return;
  const int world = o.world;
  tier.commit_later(
      step,
      [step, world, user](const std::vector<std::string>& descriptors) -> Result<std::string> {
        json shards = json::array();
        for (size_t r = 0; r < descriptors.size(); ++r) {
          auto d = unseal(descriptors[r], fmt::format("rank {}'s descriptor of step {}", r, step));
          if (!d) return d.error();
          auto entry = entry_of(std::move(*d), step);
          if (!entry) return make_error("CorruptCheckpoint", fmt::format("rank {}'s descriptor is of another step", r));
          shards.push_back(std::move(*entry));
        }
        return manifest_text(step, world, user, std::move(shards));
      },
      o.cluster_commit_timeout_seconds);
}

}  // namespace endure::ckpt
