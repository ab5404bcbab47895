#include "s3_figures.h"

#include "common/fs.h"
#include "timing.h"
#include "train/ckpt/format.h"
#include "train/ckpt/s3_store.h"
#include "train/ckpt/tiers.h"

namespace endure::bench {

Result<S3Figures> s3_figures(const std::filesystem::path& dir, int64_t step, const std::string& uri,
                             const std::vector<ckpt::MutableBuffer>& into, int rounds) {
  auto store = ckpt::S3Store::open(uri);
  if (!store) return store.error();
  auto info = ckpt::inspect(ckpt::step_dir(dir, step), step);
  if (!info.valid) return make_error("CorruptCheckpoint", info.path.string() + ": " + info.reason);
  // A folder with no step of its own: the restore has only the S3 tier to read from.
  const auto empty = dir.parent_path() / (dir.filename().string() + "-s3-restore");
  ckpt::Options o;
  o.dir = empty;
  o.s3 = uri;
  o.keep_last = 0;
  auto reader = ckpt::Checkpointer::open(o);
  if (!reader) return reader.error();

  std::vector<double> persists, restores;
  for (int r = 0; r < rounds; ++r) {
    drop_caches();
    auto t0 = Clock::now();
    Status s = (*store)->put_shard(step, 0, ckpt::step_dir(dir, step));
    if (s) s = (*store)->commit(step, 1, info.user, 60);
    if (!s) return s.error();
    persists.push_back(seconds_since(t0));

    drop_caches();
    t0 = Clock::now();
    auto loaded = (*reader)->load_into(step, into);
    if (!loaded) return loaded.error();
    if (loaded->tiers != std::vector<std::string>{"s3"}) {
      return make_error("BenchError",
                        "the restore came from " + loaded->tiers.front() + ", not s3");
    }
    restores.push_back(seconds_since(t0));
  }
  (void)fs::remove_tree(empty);
  return S3Figures{median(persists), median(restores)};
}

}  // namespace endure::bench
