// N ranks as threads of one test process, each with its own communicator, met through one
// store: how the collectives' and the trainers' multi-rank tests run.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "endure/comm.h"

namespace endure::testing_ranks {

// Rank `rank` of `world`, meeting under key, every call bounded by timeout.
inline comm::Options options(int rank, int world, const std::string& key,
                             std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  comm::Options o;
  o.rank = rank;
  o.world = world;
  o.key = key;
  o.timeout = timeout;
  return o;
}

// Runs body(comm) on `world` ranks, met in store under key (default: a fresh in-memory
// store and key); fails the test for a rank that could not connect.
inline void run_ranks(int world, const std::function<void(comm::Communicator&)>& body,
                      std::shared_ptr<comm::RendezvousStore> store = nullptr,
                      std::string key = "") {
  static std::atomic<int> rendezvous{0};
  if (!store) store = comm::memory_store();
  if (key.empty()) key = "test-" + std::to_string(rendezvous++);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      auto c = comm::connect(options(r, world, key), store);
      ASSERT_TRUE(c.ok()) << key << " rank " << r << ": " << c.error().message;
      body(**c);
    });
  }
  for (auto& t : ranks) t.join();
}

}  // namespace endure::testing_ranks
