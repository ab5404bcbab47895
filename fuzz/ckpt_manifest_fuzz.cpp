// A checkpoint's manifest as a restore reads it. The input is the manifest's body: sealed
// here with its checksum (the fuzzer could not forge one) and written beside a real shard,
// then the step is verified: every field the manifest names is checked against the shard.
// The raw input is also unsealed as it is, as a damaged file would be.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "endure/checkpoint.h"
#include "scratch_folder.h"
#include "train/ckpt/format.h"

namespace {

// A folder holding step 1 with one valid 116-byte shard, made once per process.
const std::filesystem::path& step_folder() {
  static const std::filesystem::path dir = [] {
    auto step = endure::ckpt::step_dir(endure::fuzz::scratch_folder("ckpt"), 1);
    std::filesystem::create_directories(step);
    std::string shard = endure::ckpt::shard_header(0) + std::string(100, 'x');
    std::ofstream(step / endure::ckpt::shard_name(0), std::ios::binary) << shard;
    return step;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)endure::ckpt::unseal(text, "fuzz");
  auto body = endure::json::parse(text, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return 0;
  const auto& dir = step_folder();
  std::ofstream(dir / endure::ckpt::kManifestName, std::ios::trunc) << endure::ckpt::seal(body).dump();
  (void)endure::ckpt::verify_checkpoint(dir);
  return 0;
}
