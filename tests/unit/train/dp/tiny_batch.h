// The tiny Llama's test batch, split over ranks by the data-parallel tests, their fixture,
// and how two parameter buffers compare tensor by tensor.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "endure/model.h"

namespace endure::testing_tiny {

constexpr int kBatch = 60;  // the global batch: 60 rows split evenly over 1 to 5 ranks
constexpr uint64_t kSeed = 7;

struct Batch {
  std::vector<int32_t> inputs, targets;
  int T = 0;
};

inline Batch make_batch(const model::LlamaConfig& config) {
  Batch b;
  b.T = config.seq_len;
  std::mt19937 gen(42);
  std::uniform_int_distribution<int32_t> token(0, config.vocab_size - 1);
  for (int i = 0; i < kBatch * b.T; ++i) {
    b.inputs.push_back(token(gen));
    b.targets.push_back(token(gen));
  }
  return b;
}

// Per tensor: |a - b| / |b| in the 2-norm.
inline std::map<std::string, double> relative_errors(const model::LlamaConfig& config,
                                                     const std::vector<float>& a,
                                                     const std::vector<float>& b) {
  auto m = model::Llama::create(config, 1);
  std::map<std::string, double> out;
  for (const auto& p : (*m)->named_parameters()) {
    double diff = 0, norm = 0;
    for (size_t i = p.offset; i < p.offset + p.numel(); ++i) {
      diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
      norm += double(b[i]) * b[i];
    }
    out[p.name] = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  }
  return out;
}

// One thread per rank and per model: OpenMP's own threads would only compete for the cores.
inline const bool kOneThread = [] { return ::setenv("OMP_NUM_THREADS", "1", 1) == 0; }();

// The tiny Llama and its batch, for GetParam() ranks.
class TinyRanks : public testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kOneThread);
    auto preset = model::LlamaConfig::preset("tiny");
    ASSERT_TRUE(preset.ok());
    config = *preset;
    batch = make_batch(config);
  }
  const int world = GetParam();
  model::LlamaConfig config;
  Batch batch;
};

}  // namespace endure::testing_tiny
