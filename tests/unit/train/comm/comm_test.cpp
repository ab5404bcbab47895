// endure::comm over Gloo: N ranks as threads of this process, met through one in-memory
// store, for world sizes 1 to 5 (non-powers of two included); every collective against a
// reference computed here, and a dead peer turned into an error within the timeout.
#include "endure/comm.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../rank_threads.h"

namespace endure::comm {
namespace {

using namespace std::chrono_literals;

using testing_ranks::options;
using testing_ranks::run_ranks;

// Values every rank can compute for every rank: small integers, so that any order of the
// sum gives the exact reference.
float value(int rank, size_t i) {
  return static_cast<float>(rank * 1000 + static_cast<int>(i % 997));
}

float reference_sum(int world, size_t i) {
  float sum = 0;
  for (int r = 0; r < world; ++r) sum += value(r, i);
  return sum;
}

TEST(ShardRange, SplitsEveryBufferInRankOrderWithinOneElement) {
  for (size_t count : {0, 1, 4, 7, 10, 1000, 1001}) {
    for (int world = 1; world <= 5; ++world) {
      size_t next = 0;
      for (int r = 0; r < world; ++r) {
        Range range = shard_range(count, world, r);
        EXPECT_EQ(range.offset, next) << count << " / " << world << " rank " << r;
        EXPECT_TRUE(range.count == count / world || range.count == count / world + 1);
        next += range.count;
      }
      EXPECT_EQ(next, count) << count << " / " << world;
    }
  }
}

TEST(RendezvousKey, NamesJobStepRestartAndTry) {
  auto key = rendezvous_key({{"SLURM_JOB_ID", "42"},
                             {"SLURM_STEP_ID", "3"},
                             {"SLURM_RESTART_COUNT", "1"},
                             {"ENDURE_AUTO_RESUME_COUNT", "2"}});
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, "job-42.step-3.restart-1.try-2");
  EXPECT_EQ(*rendezvous_key({{"SLURM_JOB_ID", "7"}}), "job-7.step-0.restart-0.try-0");
  auto none = rendezvous_key({});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("SLURM_JOB_ID"), std::string::npos);
}

TEST(Connect, RefusesARankOutsideTheWorldAndAnEmptyKey) {
  auto store = memory_store();
  Options o = options(3, 3, "k");
  auto outside = connect(o, store);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().code, "InvalidArgument");
  o.rank = 0;
  o.key = "";
  EXPECT_FALSE(connect(o, store).ok());
}

class Collectives : public testing::TestWithParam<int> {};

TEST_P(Collectives, AllReduceSumsEveryRankAcrossManySegments) {
  const int world = GetParam();
  const size_t count = 300007;  // past Gloo's 1 MiB segments, and not a multiple of world
  run_ranks(world, [&](Communicator& comm) {
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = value(comm.rank(), i);
    ASSERT_TRUE(comm.all_reduce(data.data(), count).ok());
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(data[i], reference_sum(world, i)) << "rank " << comm.rank() << " element " << i;
    }
  });
}

TEST_P(Collectives, AllReduceIsBitwiseTheSameOnEveryRankAndInEveryRun) {
  const int world = GetParam();
  const size_t count = 65537;
  std::vector<std::vector<float>> results;
  for (int run = 0; run < 2; ++run) {
    std::vector<std::vector<float>> by_rank(world);
    run_ranks(world, [&](Communicator& comm) {
      std::mt19937 gen(1234 + comm.rank());
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<float> data(count);
      for (auto& x : data) x = dist(gen);  // sums that depend on their order
      ASSERT_TRUE(comm.all_reduce(data.data(), count).ok());
      by_rank[comm.rank()] = std::move(data);
    });
    for (int r = 1; r < world; ++r) {
      EXPECT_EQ(std::memcmp(by_rank[r].data(), by_rank[0].data(), count * sizeof(float)), 0)
          << "rank " << r << " differs from rank 0";
    }
    results.push_back(by_rank[0]);
  }
  EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), count * sizeof(float)), 0)
      << "two runs of the same world differ";
}

TEST_P(Collectives, ReduceScatterKeepsEachRanksPartOfTheSum) {
  const int world = GetParam();
  for (size_t count : {size_t{1}, size_t{10}, size_t{100003}}) {
    run_ranks(world, [&](Communicator& comm) {
      std::vector<float> in(count);
      for (size_t i = 0; i < count; ++i) in[i] = value(comm.rank(), i);
      Range mine = shard_range(count, world, comm.rank());
      std::vector<float> out(mine.count + 1, -7.0f);  // one guard element past the part
      ASSERT_TRUE(comm.reduce_scatter(in.data(), count, out.data()).ok());
      for (size_t j = 0; j < mine.count; ++j) {
        ASSERT_EQ(out[j], reference_sum(world, mine.offset + j)) << "rank " << comm.rank();
      }
      EXPECT_EQ(out[mine.count], -7.0f) << "written past the part";
    });
  }
}

// Parts of any size, empty ones included: what the sharded trainer's units give (a layer
// smaller than the world, a bucket all of one rank's part).
std::vector<std::vector<size_t>> uneven_parts(int world) {
  std::vector<std::vector<size_t>> out;
  std::vector<size_t> first_only(world, 0), last_only(world, 0), ramp(world, 0);
  first_only[0] = 5000;
  last_only[world - 1] = 3;
  for (int k = 0; k < world; ++k) ramp[k] = static_cast<size_t>(k * 7919 + (k % 2));
  return {first_only, last_only, ramp, std::vector<size_t>(world, 0)};
}

TEST_P(Collectives, UnevenPartsReduceAndGatherTheirOwnSpans) {
  const int world = GetParam();
  for (const auto& counts : uneven_parts(world)) {
    size_t count = 0;
    for (size_t c : counts) count += c;
    run_ranks(world, [&](Communicator& comm) {
      const int r = comm.rank();
      size_t offset = 0;
      for (int k = 0; k < r; ++k) offset += counts[k];
      std::vector<float> data(count);
      for (size_t i = 0; i < count; ++i) data[i] = value(r, i);
      std::vector<float> part(counts[r] + 1, -7.0f);
      ASSERT_TRUE(comm.reduce_scatter_v(data.data(), counts, part.data()).ok());
      for (size_t j = 0; j < counts[r]; ++j) {
        ASSERT_EQ(part[j], reference_sum(world, offset + j)) << "rank " << r << " element " << j;
      }
      EXPECT_EQ(part[counts[r]], -7.0f) << "written past the part";

      std::vector<float> gathered(count, -1.0f);
      ASSERT_TRUE(comm.all_gather_v(part.data(), counts, gathered.data()).ok());
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(gathered[i], reference_sum(world, i));

      std::vector<float> in_place(count, -1.0f);
      std::copy_n(part.data(), counts[r], in_place.data() + offset);
      ASSERT_TRUE(comm.all_gather_v(in_place.data() + offset, counts, in_place.data()).ok());
      EXPECT_EQ(in_place, gathered) << "in place";
    });
  }
}

TEST_P(Collectives, ReduceScatterIsBitwiseTheSameInEveryRun) {
  const int world = GetParam();
  const size_t count = 40009;
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; ++run) {
    std::vector<float> whole(count);
    run_ranks(world, [&](Communicator& comm) {
      std::mt19937 gen(99 + comm.rank());
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<float> data(count);
      for (auto& x : data) x = dist(gen);
      Range mine = shard_range(count, world, comm.rank());
      ASSERT_TRUE(comm.reduce_scatter(data.data(), count, whole.data() + mine.offset).ok());
    });
    runs.push_back(whole);
  }
  EXPECT_EQ(std::memcmp(runs[0].data(), runs[1].data(), count * sizeof(float)), 0);
}

TEST_P(Collectives, PartsThatDoNotMatchTheWorldAreRefused) {
  const int world = GetParam();
  run_ranks(world, [&](Communicator& comm) {
    std::vector<float> data(8), out(8);
    std::vector<size_t> wrong(world + 1, 1);
    auto s = comm.reduce_scatter_v(data.data(), wrong, out.data());
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, "InvalidArgument");
    EXPECT_FALSE(comm.all_gather_v(data.data(), wrong, out.data()).ok());
  });
}

TEST_P(Collectives, AllGatherPutsEveryPartInItsPlace) {
  const int world = GetParam();
  for (size_t count : {size_t{1}, size_t{7}, size_t{100003}}) {
    run_ranks(world, [&](Communicator& comm) {
      Range mine = shard_range(count, world, comm.rank());
      std::vector<float> shard(mine.count);
      for (size_t j = 0; j < mine.count; ++j) shard[j] = static_cast<float>(mine.offset + j);
      std::vector<float> out(count, -1.0f);
      ASSERT_TRUE(comm.all_gather(shard.data(), count, out.data()).ok());
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], static_cast<float>(i));
    });
  }
}

TEST_P(Collectives, BroadcastCopiesTheRootsBytesFromEveryRoot) {
  const int world = GetParam();
  run_ranks(world, [&](Communicator& comm) {
    for (int root = 0; root < world; ++root) {
      std::string data(4099, static_cast<char>('a' + comm.rank()));
      ASSERT_TRUE(comm.broadcast(data.data(), data.size(), root).ok());
      EXPECT_EQ(data, std::string(4099, static_cast<char>('a' + root))) << "root " << root;
    }
    std::string one = "x";
    EXPECT_FALSE(comm.broadcast(one.data(), 1, world).ok()) << "a root outside the world";
  });
}

TEST_P(Collectives, BarrierWaitsForTheLastRank) {
  const int world = GetParam();
  std::atomic<int> arrived{0};
  run_ranks(world, [&](Communicator& comm) {
    if (comm.rank() == world - 1) std::this_thread::sleep_for(200ms);
    arrived++;
    ASSERT_TRUE(comm.barrier().ok());
    EXPECT_EQ(arrived.load(), world) << "rank " << comm.rank() << " passed the barrier early";
  });
}

INSTANTIATE_TEST_SUITE_P(Worlds, Collectives, testing::Values(1, 2, 3, 4, 5),
                         [](const testing::TestParamInfo<int>& p) {
                           return "world" + std::to_string(p.param);
                         });

// Ranks as threads share one file store here: Gloo's own is not safe for that (its set()
// races), which file_store() mends.
TEST(FileStore, ATryAfterAnotherMeetsInTheSameFolderWithNoneOfItsState) {
  char tmpl[] = "/tmp/endure-comm-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir = tmpl;
  auto store = file_store(dir / "rendezvous");
  ASSERT_TRUE(store.ok()) << store.error().message;
  const int world = 3;
  for (const char* resume : {"0", "1"}) {
    auto key = rendezvous_key({{"SLURM_JOB_ID", "9"}, {"ENDURE_AUTO_RESUME_COUNT", resume}});
    ASSERT_TRUE(key.ok());
    run_ranks(
        world,
        [&](Communicator& comm) {
          float x = static_cast<float>(comm.rank() + 1);
          ASSERT_TRUE(comm.all_reduce(&x, 1).ok());
          EXPECT_EQ(x, 6.0f);
        },
        *store, *key);
  }
  std::filesystem::remove_all(dir);
}

TEST(DeadPeer, ARankThatLeavesMidCollectiveIsAnErrorWithinTheTimeoutNotAHang) {
  const int world = 3;
  auto store = memory_store();
  std::vector<std::thread> ranks;
  std::vector<Status> results(world);
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      auto comm = connect(options(r, world, "dead-peer", 2s), store);
      ASSERT_TRUE(comm.ok()) << comm.error().message;
      // Every rank is connected before the last one leaves: after the barrier it dies, its
      // communicator and its sockets gone, while the others go on to an all-reduce (or are
      // still in the barrier's last messages): either call must fail, not hang.
      Status s = (*comm)->barrier();
      if (r == world - 1) return;
      std::vector<float> data(1 << 20, 1.0f);
      if (s.ok()) s = (*comm)->all_reduce(data.data(), data.size());
      results[r] = s;
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < world - 1; ++r) {
    ASSERT_FALSE(results[r].ok()) << "rank " << r;
    const std::string& code = results[r].error().code;
    EXPECT_TRUE(code == "CommPeerLost" || code == "CommTimeout") << code;
  }
}

TEST(DeadPeer, ARankThatNeverComesIsATimeoutOfTheRendezvous) {
  auto store = memory_store();
  auto comm = connect(options(0, 2, "nobody-else", 1s), store);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.error().code, "CommTimeout") << comm.error().message << " / " << comm.error().code;
}

}  // namespace
}  // namespace endure::comm
