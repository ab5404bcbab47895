// Where a checkpoint's copies live and how a step is committed in each tier: the folder
// layout and manifests shared by the save side (checkpointer.cpp) and the read side
// (restore.cpp). See include/endure/checkpoint.h for the tiers themselves.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "endure/checkpoint.h"

namespace endure::ckpt {

inline constexpr int kSlots = 3;  // the memory tier's slots (saves that copy use the first two)

Result<json> read_sealed(const std::filesystem::path& path);
std::filesystem::path slot_dir(const std::filesystem::path& memory_dir, int slot);

// Cheap checks of a committed step: the manifest seals, every shard has its size. The
// manifest read for it is handed back through `manifest` when asked for.
CheckpointInfo inspect(const std::filesystem::path& dir, int64_t step, json* manifest = nullptr);

// A manifest's text (`what` names it in errors) checked as step's: sealed, of that step,
// a shard a rank. Fills info's world and user; the manifest, or why it is not one (the
// reason inspect() gives).
Result<json> step_manifest(const std::string& text, int64_t step, const std::string& what,
                           CheckpointInfo& info);

// The steps with a folder in dir, newest first.
std::vector<int64_t> steps_in(const std::filesystem::path& dir);

// A folder holding one step's shards in one tier.
struct Copy {
  std::string tier;
  std::filesystem::path dir;
};

// The shared folder a node-local tier's copies belong to, as their manifests record it.
std::string owner_of(const Options& o);

// The copies of every step (or of `only_step`) in every tier, newest step first, fastest
// tier first. A listing (`uncommitted` given) keeps only committed shared copies and names
// the shared folders without a manifest there; a restore, which stops at the first copy
// that verifies, gets every shared folder unchecked rather than a cold lookup of each.
std::map<int64_t, std::vector<Copy>, std::greater<>> copies_of(const Options& o,
                                                               std::vector<int64_t>* uncommitted = nullptr,
                                                               int64_t only_step = -1);

// The shard description of `rank` in a manifest, or null.
const json* shard_of(const json& manifest, int rank);

// Rank r's descriptor of `step` in dir as the manifest lists it, or nothing while it is
// not there.
std::optional<json> shard_entry(const std::filesystem::path& dir, int rank, int64_t step);
// A descriptor of `step` as a manifest lists it, or nothing when it is of another step.
std::optional<json> entry_of(json descriptor, int64_t step);

// Writes the manifest that makes `step` exist in dir. A node-local tier's names the shared
// folder it belongs to (`owner`); the shared folder's own names none.
Status write_manifest(const std::filesystem::path& dir, int64_t step, int world, const json& user,
                      json shards, const std::string& owner = "");
// The sealed manifest's text, the same whichever tier or store it is written to.
std::string manifest_text(int64_t step, int world, const json& user, json shards,
                          const std::string& owner = "");

// Rank 0's commit of a step in the shared folder dir: waits for every rank's descriptor
// there (Options::commit_timeout_seconds), then writes the manifest that makes it exist.
Status commit_shared(const Options& o, const std::filesystem::path& dir, int64_t step,
                     const json& user);

// Commits a node-local tier's step once every rank's descriptor of it is there.
Status commit_if_complete(const std::filesystem::path& dir, int64_t step, int world, const json& user,
                          const std::string& owner);

// Retention's decision, for a folder or a prefix: of `steps` (newest first, each with
// whether it is committed), those to remove. Committed steps past the newest keep_last (0:
// none) that are not multiples of keep_every go, and uncommitted ones below a committed
// step (saves that never finished); newer uncommitted ones are still being written.
std::vector<int64_t> steps_to_prune(const std::vector<std::pair<int64_t, bool>>& steps,
                                    int keep_last, int keep_every);

// Removes this rank's files of all but its newest `keep` steps in a node-local tier.
void prune_rank(const std::filesystem::path& dir, int rank, int keep);

}  // namespace endure::ckpt
