// XXH3 fed in pieces as a writer makes its bytes final (train/ckpt/xxh3_run.h) gives
// libxxhash's XXH3_64bits of the whole, for every length and however the run is cut.
#include "train/ckpt/xxh3_run.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <random>
#include <vector>

#include "support/checkpoint_support.h"

namespace endure::ckpt {
namespace {

uint64_t in_pieces(const std::vector<uint8_t>& bytes, const std::vector<size_t>& cuts) {
  Xxh3Run run;
  run.reset(bytes.size());
  size_t at = 0;
  for (size_t cut : cuts) {
    run.update(bytes.data() + at, cut - at);
    at = cut;
  }
  run.update(bytes.data() + at, bytes.size() - at);
  EXPECT_EQ(run.end(), bytes.size());
  return run.digest();
}

TEST(Xxh3Run, IsXxh3OfTheWholeRunHoweverItIsCut) {
  std::mt19937_64 random(7);
  // Every length across the first blocks (stripes of 64 bytes, blocks of 1 KiB, the last
  // stripe taken again), then lengths about whole blocks and a checkpoint chunk.
  std::vector<size_t> lengths;
  for (size_t n = Xxh3Run::kMinLength + 1; n <= 3000; ++n) lengths.push_back(n);
  for (size_t n : {4095, 4096, 4097, 65535, 65536, 65537}) lengths.push_back(n);
  lengths.push_back(4u << 20);
  for (size_t n : lengths) {
    const auto bytes = pattern(static_cast<int64_t>(n), n);
    const uint64_t want = XXH3_64bits(bytes.data(), n);
    ASSERT_EQ(in_pieces(bytes, {}), want) << n << " bytes whole";
    // Cut into lines, into odd pieces, one byte at a time near the end, and at random.
    std::vector<size_t> lines, odd, random_cuts;
    for (size_t at = 64; at < n; at += 64) lines.push_back(at);
    for (size_t at = 16; at < n; at += 777) odd.push_back(at);
    for (size_t at = n > 130 ? n - 130 : 1; at < n; ++at) odd.push_back(at);
    std::sort(odd.begin(), odd.end());
    odd.erase(std::unique(odd.begin(), odd.end()), odd.end());
    for (size_t at = 0; at < n; at += 1 + random() % 200) random_cuts.push_back(at);
    ASSERT_EQ(in_pieces(bytes, lines), want) << n << " bytes in lines";
    ASSERT_EQ(in_pieces(bytes, odd), want) << n << " bytes in odd pieces";
    ASSERT_EQ(in_pieces(bytes, random_cuts), want) << n << " bytes cut at random";
  }
}

// A run that takes on a tail hashed by another writer from the middle, where the writers
// met anywhere (inside a stripe, at one, at a block, in the last stripe), whether the tail
// went to the end or stopped short and the rest was fed after.
TEST(Xxh3Run, TakesOnATailHashedFromTheMiddle) {
  std::mt19937_64 random(11);
  for (size_t n : {241, 300, 1024, 1025, 2048, 5000, 70000}) {
    const auto bytes = pattern(static_cast<int64_t>(n) + 1, n);
    const uint64_t want = XXH3_64bits(bytes.data(), n);
    std::vector<size_t> meets = {1, 16, 63, 64, 65, 1000, 1023, 1024, 1040, n - 64, n - 63, n - 1};
    for (int i = 0; i < 40; ++i) meets.push_back(1 + random() % (n - 1));
    for (size_t meet : meets) {
      if (meet == 0 || meet >= n) continue;
      for (size_t stop : {n, meet + (n - meet) / 2, meet + 1}) {
        Xxh3Run run, tail;
        run.reset(n);
        tail.reset(n, meet);
        // The tail first, as a second writer may be ahead; both in uneven pieces.
        auto feed = [&](Xxh3Run& r, size_t from, size_t to) {
          for (size_t at = from, next; at < to; at = next) {
            next = std::min<size_t>(to, at + 1 + random() % 300);
            r.update(bytes.data() + at, next - at);
          }
        };
        feed(tail, meet, stop);
        feed(run, 0, meet);
        ASSERT_EQ(tail.start(), run.end());
        run.append(tail);
        run.update(bytes.data() + run.end(), n - run.end());
        ASSERT_EQ(run.end(), n);
        ASSERT_EQ(run.digest(), want) << n << " bytes, meeting at " << meet << ", tail to " << stop;
      }
    }
  }
}

TEST(Xxh3Run, IgnoresBytesPastTheRunsEnd) {
  const auto bytes = pattern(3, 5000);
  Xxh3Run run;
  run.reset(4000);
  run.update(bytes.data(), 3000);
  run.update(bytes.data() + 3000, 2000);
  EXPECT_EQ(run.end(), 4000u);
  EXPECT_EQ(run.digest(), XXH3_64bits(bytes.data(), 4000));
}

}  // namespace
}  // namespace endure::ckpt
