// What the checkpoint engine's tests share: deterministic state to save, and opening a
// checkpointer that must open.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "endure/checkpoint.h"

namespace endure::ckpt {

// Deterministic contents of step `step`'s buffer: tests check them bit for bit.
inline std::vector<uint8_t> pattern(int64_t step, size_t size) {
  std::vector<uint8_t> v(size);
  std::mt19937_64 rng(static_cast<uint64_t>(step) * 7919 + size);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

inline std::unique_ptr<Checkpointer> open_ok(const Options& o) {
  auto c = Checkpointer::open(o);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  return c.ok() ? std::move(*c) : nullptr;
}

}  // namespace endure::ckpt
