// The tiny Llama's test batch, split over ranks by the data-parallel tests, and how two
// parameter buffers compare tensor by tensor.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "endure/model.h"

namespace endure::testing_tiny {

constexpr int kBatch = 12;  // the global batch: 12 rows split evenly over 1, 2, 3 or 4 ranks
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

}  // namespace endure::testing_tiny
