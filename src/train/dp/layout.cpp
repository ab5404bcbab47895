// The layout of every stage's shards: the model's units, each split evenly among the ranks.
#include <algorithm>

#include "endure/zero.h"

namespace endure::zero {

std::vector<comm::Range> model_units(const std::vector<model::ParamView>& params) {
  // A unit is a run of tensors whose names share "tok_embeddings" or "layers.<l>"; the
  // tensors after the last layer (the final norm, an untied head) are one unit.
  auto unit_name = [](const std::string& name) {
    if (name.starts_with("layers.")) return name.substr(0, name.find('.', 7));
    if (name.starts_with("tok_embeddings.")) return std::string("tok_embeddings");
    return std::string("final");
  };
  std::vector<comm::Range> units;
  std::string current;
  for (const auto& p : params) {
    std::string name = unit_name(p.name);
    if (units.empty() || name != current) {
      units.push_back({p.offset, 0});
      current = name;
    }
    units.back().count = p.offset + p.numel() - units.back().offset;
  }
  return units;
}

Layout::Layout(std::vector<comm::Range> units, int world)
    : units_(std::move(units)), world_(world) {}

comm::Range Layout::part(std::size_t u, int rank) const {
  comm::Range r = comm::shard_range(units_[u].count, world_, rank);
  r.offset += units_[u].offset;
  return r;
}

std::vector<std::size_t> Layout::counts(std::size_t u) const {
  std::vector<std::size_t> out;
  for (int k = 0; k < world_; ++k) out.push_back(part(u, k).count);
  return out;
}

std::size_t Layout::packed(std::size_t u, int rank) const {
  std::size_t at = 0;
  for (std::size_t i = 0; i < u; ++i) at += part(i, rank).count;
  return at;
}

std::size_t Layout::floats(int rank) const { return packed(units_.size(), rank); }

std::vector<Piece> pieces(const Layout& from, const Layout& to, std::size_t u, int rank) {
  std::vector<Piece> out;
  const comm::Range want = to.part(u, rank);
  for (int k = 0; k < from.world(); ++k) {
    const comm::Range have = from.part(u, k);
    const std::size_t begin = std::max(want.offset, have.offset);
    const std::size_t end = std::min(want.offset + want.count, have.offset + have.count);
    if (begin < end) out.push_back({k, begin - have.offset, begin - want.offset, end - begin});
  }
  return out;
}

std::vector<model::ParamView> shard_views(const std::vector<model::ParamView>& all,
                                          std::size_t begin, std::size_t end) {
  std::vector<model::ParamView> out;
  for (const auto& p : all) {
    std::size_t b = std::max(begin, p.offset), e = std::min(end, p.offset + p.numel());
    if (b >= e) continue;
    const int piece = static_cast<int>(e - b);
    std::vector<int> shape =
        p.shape.size() >= 2 ? std::vector<int>{1, piece} : std::vector<int>{piece};
    out.push_back({p.name, b - begin, shape});
  }
  return out;
}

}  // namespace endure::zero
