// The trainer's checkpoints of a sharded run: each rank saves its parts of every unit
// (zero::Engine::state()) through the checkpoint engine, and a restore onto another world
// size or ZeRO stage reads each of its new parts from the old parts that cover it.
#pragma once

#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "endure/checkpoint.h"
#include "endure/zero.h"

namespace endure::train {

// This rank's parts, as the checkpoint engine saves them.
std::vector<ckpt::Buffer> state_buffers(zero::Engine& engine);

// Stage 0 on one rank (zero::Engine::state_movable()): the engine's state lives in the
// checkpointer's slots and each update writes the next state into another, so that a
// checkpoint is the state itself and a save copies nothing (ckpt::Checkpointer::
// next_state()). A slot holds every unit's parameters, then every unit's m, then every
// unit's v, named as state_buffers() names them: each kind back to back is the flat array
// the engine holds. Returns the next slot's memory as the engine's three arrays.
Result<model::AdamWSlice> next_state(ckpt::Checkpointer& ckpt, zero::Engine& engine);

// What a checkpoint's metadata says of its layout: {"world": N, "units": [floats, ...]}.
json layout_json(const zero::Layout& layout);

// Reads rank `rank`'s parts of `info` into the engine, resharding when another world size
// saved it; what was read (its tier, "resharded" when read from the old ranks' shards, and
// its bytes). No collective: a rank that fails leaves the others free to try another
// step; once every rank has read the step, engine.restored() makes the whole buffers.
// "ValidationException" when the checkpoint's units are not this model's.
Result<ckpt::CheckpointInfo> read_state(const ckpt::Checkpointer& ckpt,
                                           const ckpt::CheckpointInfo& info, int rank,
                                           zero::Engine& engine);

}  // namespace endure::train
