// endure::dp with N ranks as threads of this process: the gradient reducer against a
// reference sum (buckets that split the ranges backward reports), and a data-parallel
// step of the tiny Llama against one process's step on the whole batch.
#include "endure/dp.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../rank_threads.h"
#include "endure/model.h"
#include "endure/zero.h"
#include "tiny_batch.h"
#include "train/model/cpu_backend.h"

namespace endure::dp {
namespace {

using namespace std::chrono_literals;

using testing_ranks::run_ranks;
using namespace testing_tiny;

class Reducer : public testing::TestWithParam<int> {};

TEST_P(Reducer, SumsEveryBucketWhateverRangesBackwardReports) {
  const int world = GetParam();
  const size_t n = 10007;
  // Ranges as a backward reports them, from the end down; buckets of 1000 split them.
  const std::vector<std::pair<size_t, size_t>> ranges = {
      {9000, 10007}, {8999, 9000}, {5000, 8999}, {123, 5000}, {0, 123}};
  for (size_t bucket : {size_t{1000}, size_t{1}, size_t{20000}}) {
    run_ranks(world, [&](comm::Communicator& comm) {
      std::vector<float> grads(n);
      for (size_t i = 0; i < n; ++i) grads[i] = static_cast<float>(comm.rank() * 100 + i % 89);
      GradientReducer reducer(comm, grads.data(), n, bucket);
      for (int step = 0; step < 2; ++step) {  // a reducer serves step after step
        std::vector<float> expected(n);
        for (size_t i = 0; i < n; ++i) {
          for (int r = 0; r < world; ++r) expected[i] += static_cast<float>(r * 100 + i % 89);
          if (step == 1) expected[i] *= static_cast<float>(world);  // the sum summed again
        }
        reducer.begin();
        for (const auto& [begin, end] : ranges) reducer.ready(begin, end);
        ASSERT_TRUE(reducer.finish().ok());
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(grads[i], expected[i]) << "bucket " << bucket;
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, Reducer, testing::Values(1, 2, 3, 4, 5),
                         [](const testing::TestParamInfo<int>& p) {
                           return "world" + std::to_string(p.param);
                         });

// ---- a data-parallel step of the tiny Llama ---------------------------------------------

struct Step {
  std::vector<float> grads, params;
};

// `steps` steps (forward, backward, AdamW) of a model on rows [row, row + rows) of the
// batch, its gradients summed over the ranks by a reducer when there is a communicator. The
// gradients kept are the last step's.
Step step_on(const model::LlamaConfig& config, const Batch& batch, int row, int rows,
             comm::Communicator* comm, size_t bucket_floats, int steps = 1) {
  // Its own kernels' scratch: the shared CPU backend serves one caller at a time, and the
  // ranks here are threads of one process.
  model::CpuBackend backend;
  auto m = model::Llama::create(config, rows, &backend);
  EXPECT_TRUE(m.ok());
  auto& llama = **m;
  llama.init(kSeed);
  const int world = comm ? comm->world() : 1;
  const size_t at = static_cast<size_t>(row) * batch.T;
  model::AdamW adamw({}, llama.num_params(), llama.named_parameters(), &backend);
  std::optional<GradientReducer> reducer;
  if (comm) reducer.emplace(*comm, llama.grads(), llama.num_params(), bucket_floats);
  Step out;
  for (int step = 0; step < steps; ++step) {
    llama.zero_grad();
    (void)llama.forward(batch.inputs.data() + at, batch.targets.data() + at, rows, batch.T);
    if (reducer) {
      reducer->begin();
      // Each rank's loss is the mean over its rows: 1 / world makes the sum the global mean.
      llama.backward(1.0f / static_cast<float>(world),
                     [&](size_t begin, size_t end) { reducer->ready(begin, end); });
      EXPECT_TRUE(reducer->finish().ok());
    } else {
      llama.backward();
    }
    out.grads.assign(llama.grads(), llama.grads() + llama.num_params());
    adamw.update(llama.params(), llama.grads(), 1e-3f);
  }
  out.params.assign(llama.params(), llama.params() + llama.num_params());
  return out;
}

// The tiny Llama and its batch, split over GetParam() ranks.
class DataParallel : public TinyRanks {
 protected:
  void SetUp() override {
    TinyRanks::SetUp();
    rows = kBatch / world;
  }
  int rows = 0;
};

TEST_P(DataParallel, AStepOfNRanksIsOneProcesssStepOnTheWholeBatch) {
  const Step reference = step_on(config, batch, 0, kBatch, nullptr, 0);

  std::vector<Step> ranks(world);
  // Buckets of 500 floats: they split tensors and layers alike.
  run_ranks(world, [&](comm::Communicator& comm) {
    ranks[comm.rank()] = step_on(config, batch, comm.rank() * rows, rows, &comm, 500);
  });
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(std::memcmp(ranks[r].params.data(), ranks[0].params.data(),
                          ranks[0].params.size() * sizeof(float)),
              0)
        << "rank " << r << "'s parameters differ from rank 0's";
  }
  for (const auto& [name, err] : relative_errors(config, ranks[0].grads, reference.grads)) {
    EXPECT_LE(err, 1e-5) << "gradient of " << name;
  }
  for (const auto& [name, err] : relative_errors(config, ranks[0].params, reference.params)) {
    EXPECT_LE(err, 1e-5) << "parameter " << name << " after AdamW";
  }
}

TEST_P(DataParallel, RunsOfTheSameWorldAreBitwiseEqual) {
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; ++run) {
    std::vector<float> params;
    run_ranks(world, [&](comm::Communicator& comm) {
      Step s = step_on(config, batch, comm.rank() * rows, rows, &comm, 777);
      if (comm.rank() == 0) params = std::move(s.params);
    });
    runs.push_back(std::move(params));
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  EXPECT_EQ(std::memcmp(runs[0].data(), runs[1].data(), runs[0].size() * sizeof(float)), 0);
}

TEST(ShardViews, ClipEachTensorToTheShardAndKeepWhetherItDecays) {
  std::vector<model::ParamView> all = {{"emb", 0, {10, 4}}, {"norm", 40, {4}}, {"w", 44, {4, 4}}};
  auto views = zero::shard_views(all, 38, 50);
  ASSERT_EQ(views.size(), 3u);
  EXPECT_EQ(views[0].name, "emb");
  EXPECT_EQ(views[0].offset, 0u);
  EXPECT_EQ(views[0].numel(), 2u);
  EXPECT_EQ(views[0].shape.size(), 2u) << "a matrix's piece still decays";
  EXPECT_EQ(views[1].offset, 2u);
  EXPECT_EQ(views[1].numel(), 4u);
  EXPECT_EQ(views[1].shape.size(), 1u);
  EXPECT_EQ(views[2].offset, 6u);
  EXPECT_EQ(views[2].numel(), 6u);
  EXPECT_TRUE(zero::shard_views(all, 60, 70).empty());
}

INSTANTIATE_TEST_SUITE_P(Worlds, DataParallel, testing::Values(1, 2, 3, 4, 5),
                         [](const testing::TestParamInfo<int>& p) {
                           return "world" + std::to_string(p.param);
                         });

}  // namespace
}  // namespace endure::dp
