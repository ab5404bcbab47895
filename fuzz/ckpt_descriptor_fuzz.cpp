// A rank's descriptor of its shard, as a commit reads it before it writes the step's
// manifest. The input is the descriptor's body: sealed here with its checksum (the fuzzer
// could not forge one) and written beside a real shard in a node-local tier's step; the
// step is committed from it, verified and restored. The raw input is also unsealed as it
// is, as a damaged file would be.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "endure/checkpoint.h"
#include "scratch_folder.h"
#include "train/ckpt/format.h"
#include "train/ckpt/tiers.h"

namespace {

namespace ckpt = endure::ckpt;

// A checkpointer whose local tier holds step 1 with one valid 116-byte shard, made once.
struct Tier {
  std::unique_ptr<ckpt::Checkpointer> checkpointer;
  std::filesystem::path step;
  std::string owner;  // the shared folder, as the tier's manifests name it
};

const Tier& tier() {
  static const Tier t = [] {
    const auto& root = endure::fuzz::scratch_folder("desc");
    ckpt::Options o;
    o.dir = root / "shared";
    o.local_dir = root / "local";
    auto opened = ckpt::Checkpointer::open(o);
    if (!opened) std::abort();
    auto step = ckpt::step_dir(o.local_dir, 1);
    std::filesystem::create_directories(step);
    std::ofstream(step / ckpt::shard_name(0), std::ios::binary)
        << ckpt::shard_header(0) + std::string(100, 'x');
    return Tier{std::move(*opened), step, ckpt::owner_of(o)};
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)ckpt::unseal(text, "fuzz");
  auto body = endure::json::parse(text, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return 0;
  const auto& t = tier();
  std::error_code ec;
  std::filesystem::remove(t.step / ckpt::kManifestName, ec);
  std::ofstream(t.step / ckpt::descriptor_name(0), std::ios::trunc) << ckpt::seal(body).dump();
  if (!ckpt::commit_if_complete(t.step, 1, 1, endure::json::object(), t.owner)) return 0;
  (void)ckpt::verify_checkpoint(t.step);
  (void)t.checkpointer->load(1);
  (void)t.checkpointer->list();
  return 0;
}
