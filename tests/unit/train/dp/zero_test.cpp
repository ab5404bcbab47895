// endure::zero with N ranks as threads of this process: the layout and its resharding between
// every pair of world sizes 1 to 5, and the tiny Llama trained at every stage against plain
// data parallel and one process, restored onto other world sizes and stages.
#include "endure/zero.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "../rank_threads.h"
#include "endure/model.h"
#include "tiny_batch.h"
#include "train/model/cpu_backend.h"

namespace endure::zero {
namespace {

using testing_ranks::run_ranks;
using namespace testing_tiny;

constexpr float kNoClip = std::numeric_limits<float>::infinity();

TEST(ModelUnits, AreTheEmbeddingsEachLayerAndTheRestInBufferOrder) {
  for (bool tied : {false, true}) {
    auto config = model::LlamaConfig::preset("tiny");
    ASSERT_TRUE(config.ok());
    config->tie_embeddings = tied;
    auto m = model::Llama::create(*config, 1);
    ASSERT_TRUE(m.ok());
    auto units = model_units((*m)->named_parameters());
    ASSERT_EQ(units.size(), static_cast<size_t>(config->n_layers + 2));
    EXPECT_EQ(units[0].offset, 0u);
    EXPECT_EQ(units[0].count, static_cast<size_t>(config->vocab_size * config->dim));
    for (size_t u = 1; u < units.size(); ++u) {
      EXPECT_EQ(units[u].offset, units[u - 1].offset + units[u - 1].count) << "unit " << u;
    }
    EXPECT_EQ(units.back().offset + units.back().count, (*m)->num_params());
  }
}

TEST(Pieces, ReshardEveryUnitBetweenEveryPairOfWorldSizes) {
  // Units smaller than a world (some parts empty), and uneven ones.
  const std::vector<comm::Range> units = {{0, 3}, {3, 1000}, {1003, 1}, {1004, 77}};
  for (int from_world = 1; from_world <= 5; ++from_world) {
    for (int to_world = 1; to_world <= 5; ++to_world) {
      Layout from(units, from_world), to(units, to_world);
      for (size_t u = 0; u < units.size(); ++u) {
        for (int r = 0; r < to_world; ++r) {
          // Each element of the new part, from the old parts that hold it: its flat index.
          const comm::Range want = to.part(u, r);
          std::vector<float> part(want.count, -1.0f);
          for (const Piece& p : pieces(from, to, u, r)) {
            const comm::Range have = from.part(u, p.from_rank);
            for (size_t i = 0; i < p.count; ++i) {
              part[p.to_offset + i] = static_cast<float>(have.offset + p.from_offset + i);
            }
          }
          for (size_t i = 0; i < want.count; ++i) {
            ASSERT_EQ(part[i], static_cast<float>(want.offset + i))
                << from_world << " -> " << to_world << ", unit " << u << ", rank " << r;
          }
        }
      }
    }
  }
}

// What a run ends with: every rank's state parts by name, and the whole buffers they make.
struct Trained {
  Layout layout;
  std::vector<std::map<std::string, std::vector<float>>> parts;  // by rank
  std::vector<float> params, m, v;
  int64_t adam_step = 0;
  std::vector<float> losses;        // each step's mean over the ranks
  std::vector<size_t> state_bytes;  // by rank, after the last step
};

struct Plan {
  int world = 1;
  int stage = 0;
  int steps = 1;
  int micro = 1;  // micro-batches per step
  float clip = kNoClip;
  const Trained* start = nullptr;  // restored (resharded) first when given
  // Stage 0 on one rank: the state moved into memory of the test's, three sets of it taking
  // turns, each step updating out of place (Engine::update_into()).
  bool in_place = false;
};

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The tiny Llama trained `plan.steps` steps by plan.world ranks at plan.stage, each rank on
// its rows of the global batch (the same batch every step).
Trained train(const model::LlamaConfig& config, const Batch& batch, const Plan& plan) {
  Trained run;
  run.parts.resize(plan.world);
  run.state_bytes.resize(plan.world);
  run.losses.assign(plan.steps, 0.0f);
  std::mutex mu;
  const int rows = kBatch / plan.world, micro_rows = rows / plan.micro;
  run_ranks(plan.world, [&](comm::Communicator& comm) {
    model::CpuBackend backend;
    auto m = model::Llama::create(config, micro_rows, &backend);
    ASSERT_TRUE(m.ok());
    (*m)->init(kSeed);
    EngineOptions options;
    options.stage = plan.stage;
    options.bucket_floats = 500;  // buckets that split tensors and layers
    auto engine = Engine::create(comm, **m, options, &backend);
    ASSERT_TRUE(engine.ok()) << engine.error().message;
    Engine& e = **engine;
    if (plan.start) {
      for (const StatePart& part : e.state()) {
        for (const Piece& p : pieces(plan.start->layout, e.layout(), part.unit, comm.rank())) {
          const auto& from = plan.start->parts[p.from_rank].at(part.name);
          std::memcpy(part.data + p.to_offset, from.data() + p.from_offset,
                      p.count * sizeof(float));
        }
      }
      ASSERT_TRUE(e.restored(plan.start->adam_step).ok());
    }
    EXPECT_EQ(e.state_movable(), plan.world == 1 && plan.stage == 0);
    std::vector<std::vector<float>> sets;  // plan.in_place: set k is sets[3k..3k+2]
    auto slice = [&](int k) {
      return model::AdamWSlice{sets[3 * k].data(), sets[3 * k + 1].data(), sets[3 * k + 2].data()};
    };
    if (plan.in_place) {
      sets.assign(9, std::vector<float>((*m)->num_params()));
      ASSERT_TRUE(e.move_state(slice(0)).ok());
    }
    for (int step = 0; step < plan.steps; ++step) {
      float loss = 0;
      for (int k = 0; k < plan.micro; ++k) {
        const size_t at = static_cast<size_t>(comm.rank() * rows + k * micro_rows) * batch.T;
        auto l =
            e.micro_batch(batch.inputs.data() + at, batch.targets.data() + at, micro_rows, batch.T,
                          1.0f / static_cast<float>(plan.micro * plan.world), k == plan.micro - 1);
        ASSERT_TRUE(l.ok()) << l.error().message;
        loss += *l / static_cast<float>(plan.micro * plan.world);
      }
      ASSERT_TRUE(e.clip(plan.clip).ok());
      if (plan.in_place) {
        const int from = step % 3;
        const std::vector<float> before[3] = {sets[3 * from], sets[3 * from + 1],
                                              sets[3 * from + 2]};
        // Every float of the new state is shown once to `written`, with its final value.
        const int to = (step + 1) % 3;
        const size_t n = sets[0].size();
        std::vector<int> times(n, 0);
        std::vector<float> seen[3] = {std::vector<float>(n), std::vector<float>(n),
                                      std::vector<float>(n)};
        std::mutex seen_mu;
        auto written = [&](int, size_t b, size_t e, model::AdamWSlice values) {
          std::lock_guard lock(seen_mu);
          for (size_t i = b; i < e; ++i) ++times[i];
          std::copy(values.p, values.p + (e - b), seen[0].begin() + b);
          std::copy(values.m, values.m + (e - b), seen[1].begin() + b);
          std::copy(values.v, values.v + (e - b), seen[2].begin() + b);
        };
        ASSERT_TRUE(e.update_into(1e-3f, slice(to), written).ok());
        EXPECT_EQ(std::count(times.begin(), times.end(), 1), static_cast<long>(n));
        for (int k = 0; k < 3; ++k)
          EXPECT_TRUE(bitwise_equal(seen[k], sets[3 * to + k])) << "array " << k;
        for (int k = 0; k < 3; ++k) {
          ASSERT_TRUE(bitwise_equal(sets[3 * from + k], before[k]))
              << "the state before step " << step;
        }
      } else {
        ASSERT_TRUE(e.update(1e-3f).ok());
      }
      ASSERT_TRUE(comm.all_reduce(&loss, 1).ok());
      if (comm.rank() == 0) run.losses[step] = loss;
    }
    std::lock_guard lock(mu);
    for (const StatePart& part : e.state()) {
      run.parts[comm.rank()][part.name].assign(part.data, part.data + part.floats);
    }
    run.state_bytes[comm.rank()] = e.state_bytes();
    if (comm.rank() == 0) {
      run.layout = e.layout();
      run.adam_step = e.adam_step();
    }
  });
  // The whole buffers, each rank's parts in their places.
  const size_t n = run.layout.unit(run.layout.units() - 1).offset +
                   run.layout.unit(run.layout.units() - 1).count;
  for (auto* whole : {&run.params, &run.m, &run.v}) whole->assign(n, 0.0f);
  for (int k = 0; k < plan.world; ++k) {
    for (const auto& [name, data] : run.parts[k]) {
      const size_t dot = name.rfind('.');
      const size_t u = std::stoul(name.substr(dot + 1));
      const std::string kind = name.substr(0, dot);
      auto& whole = kind == "params" ? run.params : kind == "adam.m" ? run.m : run.v;
      std::copy(data.begin(), data.end(), whole.begin() + run.layout.part(u, k).offset);
    }
  }
  return run;
}

class Stages : public TinyRanks {
 protected:
  Plan plan(int stage, int steps = 1) const {
    Plan p;
    p.world = world;
    p.stage = stage;
    p.steps = steps;
    return p;
  }
};

TEST_P(Stages, EveryStageMatchesOneProcessOnTheWholeBatch) {
  Plan one;
  const Trained reference = train(config, batch, one);
  for (int stage = 0; stage <= 3; ++stage) {
    const Trained run = train(config, batch, plan(stage));
    for (const auto& [name, err] : relative_errors(config, run.params, reference.params)) {
      EXPECT_LE(err, 1e-5) << "stage " << stage << ": parameter " << name << " after AdamW";
    }
    EXPECT_NEAR(run.losses[0], reference.losses[0], 1e-5 * std::abs(reference.losses[0]));
  }
}

TEST_P(Stages, ShardingTheOptimizerOrTheParametersChangesNoBit) {
  // Stage 1 sums the gradients as stage 0 does, stage 3 as stage 2 does; AdamW is
  // elementwise and clipping sums in a fixed order: the same bytes, step after step.
  Plan clipped0 = plan(0, 3), clipped1 = plan(1, 3), clipped2 = plan(2, 3), clipped3 = plan(3, 3);
  for (Plan* p : {&clipped0, &clipped1, &clipped2, &clipped3}) p->clip = 0.05f;
  const Trained zero = train(config, batch, clipped0), one = train(config, batch, clipped1);
  const Trained two = train(config, batch, clipped2), three = train(config, batch, clipped3);
  EXPECT_TRUE(bitwise_equal(one.params, zero.params)) << "stage 1 against stage 0";
  EXPECT_TRUE(bitwise_equal(one.m, zero.m) && bitwise_equal(one.v, zero.v));
  EXPECT_TRUE(bitwise_equal(three.params, two.params)) << "stage 3 against stage 2";
  EXPECT_TRUE(bitwise_equal(three.m, two.m) && bitwise_equal(three.v, two.v));
  for (const auto& [name, err] : relative_errors(config, two.params, zero.params)) {
    EXPECT_LE(err, 1e-5) << "stage 2 against stage 0: " << name;
  }
  EXPECT_TRUE(bitwise_equal(train(config, batch, clipped3).params, three.params))
      << "two runs of stage 3 differ";
}

TEST_P(Stages, MicroBatchesAccumulateToTheWholeBatchsStep) {
  if (kBatch / world % 2 != 0) GTEST_SKIP() << "rows per rank do not split in two";
  const Trained whole = train(config, batch, plan(0));
  for (int stage : {0, 2, 3}) {
    Plan halves = plan(stage);
    halves.micro = 2;
    const Trained run = train(config, batch, halves);
    for (const auto& [name, err] : relative_errors(config, run.params, whole.params)) {
      EXPECT_LE(err, 1e-5) << "stage " << stage << " in two micro-batches: " << name;
    }
  }
}

TEST_P(Stages, EachStageHoldsLessThanTheOneBefore) {
  if (world < 2) GTEST_SKIP() << "one rank shards nothing";
  size_t before = std::numeric_limits<size_t>::max();
  for (int stage = 0; stage <= 3; ++stage) {
    const Trained run = train(config, batch, plan(stage));
    EXPECT_LT(run.state_bytes[0], before) << "stage " << stage;
    before = run.state_bytes[0];
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, Stages, testing::Values(1, 2, 3, 4, 5),
                         [](const testing::TestParamInfo<int>& p) {
                           return "world" + std::to_string(p.param);
                         });

class Reshard : public Stages {};

TEST_P(Reshard, AnotherWorldAndStageGoOnAsTheRunWouldHave) {
  // Two steps on 4 ranks at stage 2, then one more on this world at each stage: the same
  // step as the 4 ranks' third, within the order of the sums.
  Plan first;
  first.world = 4;
  first.stage = 2;
  first.steps = 2;
  const Trained saved = train(config, batch, first);
  Plan more = first;
  more.steps = 1;
  more.start = &saved;
  const Trained reference = train(config, batch, more);
  for (int stage = 0; stage <= 3; ++stage) {
    Plan p = plan(stage);
    p.start = &saved;
    const Trained run = train(config, batch, p);
    EXPECT_EQ(run.adam_step, 3);
    EXPECT_NEAR(run.losses[0], reference.losses[0], 1e-5 * std::abs(reference.losses[0]))
        << "stage " << stage;
    for (const auto& [name, err] : relative_errors(config, run.params, reference.params)) {
      EXPECT_LE(err, 1e-5) << world << " ranks at stage " << stage << ": " << name;
    }
  }
}

TEST_P(Reshard, ThereAndBackIsACopyBitForBit) {
  Plan first;
  first.world = 4;
  first.stage = 1;
  first.steps = 2;
  const Trained saved = train(config, batch, first);
  Plan there = plan(3, 0);
  there.start = &saved;
  const Trained moved = train(config, batch, there);
  Plan back = first;
  back.steps = 0;
  back.start = &moved;
  const Trained returned = train(config, batch, back);
  EXPECT_TRUE(bitwise_equal(returned.params, saved.params));
  EXPECT_TRUE(bitwise_equal(returned.m, saved.m));
  EXPECT_TRUE(bitwise_equal(returned.v, saved.v));
  EXPECT_EQ(returned.parts, saved.parts) << "each rank's parts, by name";
}

// Out of place, step after step: the same bytes as in place, and the state each update read
// left as it was (what makes it a checkpoint without a copy).
TEST(StateInPlace, UpdatingOutOfPlaceChangesNoBitAndLeavesTheStateReadAsItWas) {
  auto config = model::LlamaConfig::preset("tiny");
  ASSERT_TRUE(config.ok());
  const Batch batch = make_batch(*config);
  Plan plain;
  plain.steps = 4;
  plain.clip = 0.05f;
  Plan moved = plain;
  moved.in_place = true;
  const Trained a = train(*config, batch, plain), b = train(*config, batch, moved);
  EXPECT_TRUE(bitwise_equal(a.params, b.params));
  EXPECT_TRUE(bitwise_equal(a.m, b.m) && bitwise_equal(a.v, b.v));
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.adam_step, b.adam_step);
}

INSTANTIATE_TEST_SUITE_P(Worlds, Reshard, testing::Values(1, 2, 3, 4, 5),
                         [](const testing::TestParamInfo<int>& p) {
                           return "world" + std::to_string(p.param);
                         });

}  // namespace
}  // namespace endure::zero
