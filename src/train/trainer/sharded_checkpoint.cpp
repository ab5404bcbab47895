#include "train/trainer/sharded_checkpoint.h"

#include <cstring>
#include <map>

namespace endure::train {

std::vector<ckpt::Buffer> state_buffers(zero::Engine& engine) {
  std::vector<ckpt::Buffer> out;
  for (const auto& p : engine.state()) out.push_back({p.name, p.data, p.floats * sizeof(float)});
  return out;
}

Result<model::AdamWSlice> next_state(ckpt::Checkpointer& ckpt, zero::Engine& engine) {
  const auto parts = engine.state();
  std::vector<ckpt::BufferShape> shapes;
  for (const char* kind : {"params.", "adam.m.", "adam.v."}) {
    for (const auto& p : parts) {
      if (p.name.rfind(kind, 0) == 0) shapes.push_back({p.name, p.floats * sizeof(float)});
    }
  }
  auto buffers = ckpt.next_state(shapes);
  if (!buffers.ok()) return buffers.error();
  const std::size_t units = shapes.size() / 3;
  auto at = [&](std::size_t i) { return static_cast<float*>((*buffers)[i].data); };
  return model::AdamWSlice{at(0), at(units), at(2 * units)};
}

json layout_json(const zero::Layout& layout) {
  json units = json::array();
  for (std::size_t u = 0; u < layout.units(); ++u) units.push_back(layout.unit(u).count);
  return json{{"world", layout.world()}, {"units", units}};
}

Result<ckpt::CheckpointInfo> read_state(const ckpt::Checkpointer& ckpt,
                                           const ckpt::CheckpointInfo& info, int rank,
                                           zero::Engine& engine) {
  const zero::Layout& now = engine.layout();
  const json saved = info.user.value("layout", json());
  json units = layout_json(now)["units"];
  if (!saved.is_object() || saved.value("units", json()) != units ||
      !saved.value("world", json()).is_number_integer() || saved["world"].get<int>() < 1) {
    return make_error("ValidationException", "checkpoint step " + std::to_string(info.step) +
                                                 " in " + ckpt.options().dir.string() +
                                                 " has no layout of this model's units (" +
                                                 saved.dump() + "): give a new ckpt_dir");
  }
  std::vector<comm::Range> ranges;
  for (std::size_t u = 0; u < now.units(); ++u) ranges.push_back(now.unit(u));
  const zero::Layout then(ranges, saved["world"].get<int>());
  auto parts = engine.state();

  ckpt::CheckpointInfo read = info;
  if (then.world() == now.world()) {
    std::vector<ckpt::MutableBuffer> buffers;
    for (const auto& p : parts) buffers.push_back({p.name, p.data, p.floats * sizeof(float)});
    auto loaded = ckpt.load_into(info.step, buffers);
    if (!loaded) return loaded.error();
    read = std::move(*loaded);
  } else {
    read.tiers = {"resharded"};
    read.bytes_read = 0;
    // Each old rank's shard is read once, when a piece first needs it.
    std::map<int, ckpt::Loaded> old;
    for (const auto& p : parts) {
      for (const zero::Piece& piece : zero::pieces(then, now, p.unit, rank)) {
        if (!old.count(piece.from_rank)) {
          auto loaded = ckpt.load_rank(info.step, piece.from_rank);
          if (!loaded) return loaded.error();
          for (const auto& [name, bytes] : loaded->buffers) read.bytes_read += bytes.size();
          old[piece.from_rank] = std::move(*loaded);
        }
        const auto& buffers = old[piece.from_rank].buffers;
        auto it = buffers.find(p.name);
        const std::size_t need = (piece.from_offset + piece.count) * sizeof(float);
        if (it == buffers.end() || it->second.size() < need) {
          return make_error("CorruptCheckpoint", "checkpoint step " + std::to_string(info.step) +
                                                     ": rank " + std::to_string(piece.from_rank) +
                                                     "'s shard lacks " + p.name);
        }
        std::memcpy(p.data + piece.to_offset, it->second.data() + piece.from_offset * sizeof(float),
                    piece.count * sizeof(float));
      }
    }
  }
  return read;
}

}  // namespace endure::train
