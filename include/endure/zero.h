// endure's sharded data-parallel training (ZeRO, and FSDP-style at stage 3), built on the
// collectives (comm.h) and the gradient buckets (dp.h).
//
// Every rank runs the whole model on its own part of each batch. What each would hold whole
// is split among them instead, by stage:
//   0  nothing: plain data parallel (gradients all-reduced in buckets during backward);
//   1  AdamW's two moments: each rank updates only its part of the parameters, then the
//      parts are all-gathered;
//   2  also the gradients: each unit's gradients are reduce-scattered as soon as backward
//      has finished them, and dropped;
//   3  also the parameters: a unit's parameters are gathered just before forward or
//      backward uses them (the next unit's gather runs while this one computes) and
//      dropped after.
// Per parameter in fp32 that is 16 bytes, 8 + 8/N, 4 + 12/N and 16/N (plus the units
// gathered at the moment) on each of N ranks.
//
// One layout for all of it (Layout): the model's units (the embeddings, each layer, the
// final norm and head) each split evenly among the ranks, rank k holding part k of every
// unit. A checkpoint saves each rank's parts, so a restore onto another stage only keeps
// other parts whole, and one onto another world size (pieces()) reads each new part from
// the old parts that cover it.
//
// Determinism: every collective and every sum has an order fixed by the world size, and the
// AdamW update is elementwise, so two runs of one world size and stage give the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "endure/comm.h"
#include "endure/model.h"

namespace endure::zero {

// The units of a Llama's flat buffer, in order (model::ParamHooks' units), from its
// named_parameters(): the embeddings, each layer, then the rest (final norm, untied head).
std::vector<comm::Range> model_units(const std::vector<model::ParamView>& params);

// How a flat buffer of units is split among `world` ranks: each unit by comm::shard_range,
// rank k holding part k of every unit.
class Layout {
 public:
  Layout() = default;
  Layout(std::vector<comm::Range> units, int world);

  int world() const { return world_; }
  std::size_t units() const { return units_.size(); }
  comm::Range unit(std::size_t u) const { return units_[u]; }
  // Rank `rank`'s part of unit u, in the flat buffer.
  comm::Range part(std::size_t u, int rank) const;
  // Every rank's part of unit u: what the collectives on it take.
  std::vector<std::size_t> counts(std::size_t u) const;
  // Where part u starts when a rank's parts lie back to back in unit order, and their total.
  std::size_t packed(std::size_t u, int rank) const;
  std::size_t floats(int rank) const;

 private:
  std::vector<comm::Range> units_;
  int world_ = 1;
};

// A piece of a resharding: `count` floats of old rank `from_rank`'s part of a unit, from
// `from_offset` in that part, go to `to_offset` in the new part.
struct Piece {
  int from_rank = 0;
  std::size_t from_offset = 0;
  std::size_t to_offset = 0;
  std::size_t count = 0;
};
// The pieces of `from`'s parts of unit u that make up `rank`'s part of it under `to`, in
// order. REQUIRES: the two layouts have the same units.
std::vector<Piece> pieces(const Layout& from, const Layout& to, std::size_t u, int rank);

// The tensors of all that lie in [begin, end) of the flat buffer, clipped to it, with
// offsets from begin: what AdamW takes for that part. A matrix's piece keeps two
// dimensions ({1, piece}), so it decays as the matrix does.
std::vector<model::ParamView> shard_views(const std::vector<model::ParamView>& all,
                                          std::size_t begin, std::size_t end);

struct EngineOptions {
  int stage = 0;                        // 0 .. 3, above
  std::size_t bucket_floats = 1 << 20;  // stages 0 and 1: the all-reduce buckets
  model::AdamWConfig adam;
};

// One named part of this rank's training state, in live memory: what a checkpoint saves
// and a restore fills. Names: "params.<u>", "adam.m.<u>", "adam.v.<u>" for unit u's part.
struct StatePart {
  std::string name;
  std::size_t unit = 0;
  float* data = nullptr;
  std::size_t floats = 0;
};

// One rank's training: the model's steps, their collectives and AdamW, under a stage.
class Engine {
 public:
  // The model must be initialised alike on every rank (init(seed)) and have no hooks set;
  // stage 3 keeps only this rank's parts of its parameters. comm and model must outlive
  // the engine. backend: the model's (nullptr: the CPU one).
  static Result<std::unique_ptr<Engine>> create(comm::Communicator& comm, model::Llama& model,
                                                const EngineOptions& options,
                                                model::Backend* backend = nullptr);
  ~Engine();

  // One micro-batch of a step: forward, then backward with grad_scale (1 / (micro-batches
  // x world) for the global mean), and the collectives of its gradients (stages 0 and 1
  // after the step's last micro-batch, 2 and 3 after each). Returns this rank's loss.
  Result<float> micro_batch(const int32_t* inputs, const int32_t* targets, int B, int T,
                            float grad_scale, bool last);
  // After the last micro-batch: clips the gradients summed over the ranks to max_norm in
  // the global L2 norm (infinity: none); returns the norm before.
  Result<float> clip(float max_norm);
  // AdamW with this lr on this rank's parts, then the gathers the stage needs; the
  // gradients are zero for the next step after.
  Status update(float lr);
  // Stage 0 on one rank holds its whole state as three arrays of n floats (the parameters
  // and AdamW's moments), which may live in the caller's memory: move_state() copies them
  // there, and update_into() is update() writing the new state into `next` instead of in
  // place, leaving the state before the step as it was where it was read from (so that it
  // is a checkpoint without a copy). The caller keeps the memory alive while it is used.
  // `written` hears of each piece of `next` made final (model::AdamW::update_into()).
  bool state_movable() const;
  Status move_state(model::AdamWSlice to);
  Status update_into(float lr, model::AdamWSlice next, const model::AdamW::Written& written = {});
  // Forward alone (evaluation): the mean loss of this rank's rows.
  Result<float> forward(const int32_t* inputs, const int32_t* targets, int B, int T);

  // This rank's parts of the parameters and of AdamW's moments (empty parts left out).
  std::vector<StatePart> state();
  // After state() has been filled by a restore: gathers what the stage keeps whole.
  Status restored(int64_t adam_step);
  int64_t adam_step() const;

  const Layout& layout() const;
  int stage() const;
  // The last step's seconds in collectives, and those the model waited for (not hidden).
  double comm_seconds() const;
  double exposed_seconds() const;
  // Bytes of parameters, gradients and AdamW state this rank holds now (resident pages).
  std::size_t state_bytes() const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace endure::zero
