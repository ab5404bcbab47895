// A prepared data folder as the token loader opens it: index.json and a token shard. The
// first byte sets the loader's options (checksums verified or not, split, batch, seq_len);
// the rest is the index's body, sealed here (the fuzzer could not forge its checksum), and
// after a NUL byte, when there is one, the bytes of train-00000.bin (else a valid shard of
// 64 tokens). A loader that opens is asked for a few batches and to restore a position.
// The raw input is also unsealed as it is, as a damaged index would be.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "endure/data.h"
#include "scratch_folder.h"
#include "train/data/shard_format.h"

namespace {

namespace data = endure::data;
using endure::json;

// 64 tokens of a 300-token vocabulary, 2 bytes each.
std::string valid_shard() {
  std::string out = data::encode_shard_header({2, 64, 300});
  for (uint16_t i = 0; i < 64; ++i) {
    uint16_t id = i * 7 % 300;
    out.append(reinterpret_cast<const char*>(&id), sizeof id);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = bytes[0];
  std::string rest(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  std::string index_text = rest, shard = valid_shard();
  if (auto nul = rest.find('\0'); nul != std::string::npos) {
    index_text = rest.substr(0, nul);
    shard = rest.substr(nul + 1);
  }
  (void)data::unseal_index(index_text, "fuzz");
  auto index = json::parse(index_text, nullptr, false);
  if (index.is_discarded() || !index.is_object()) return 0;

  const auto& dir = endure::fuzz::scratch_folder("tokens");
  std::ofstream(dir / data::kIndexName, std::ios::trunc) << data::seal_index(index).dump();
  std::ofstream(dir / data::shard_name("train", 0), std::ios::binary | std::ios::trunc) << shard;

  data::LoaderOptions o;
  o.dir = dir;
  o.verify_checksums = flags & 1;
  o.split = flags & 2 ? "val" : "train";
  o.batch = 1 + (flags >> 2 & 3);
  o.seq_len = 1 + (flags >> 4);
  auto loader = data::TokenLoader::open(o);
  if (!loader) return 0;
  std::vector<int32_t> inputs(o.batch * o.seq_len), targets(inputs.size());
  for (int i = 0; i < 3; ++i) (*loader)->next(inputs.data(), targets.data());
  auto position = (*loader)->position();
  if (!(*loader)->restore(position)) std::abort();
  if (auto again = data::LoaderPosition::from_json(position.to_json()); !again) std::abort();
  return 0;
}
