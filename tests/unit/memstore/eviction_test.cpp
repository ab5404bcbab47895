// What a memory store drops for room: the oldest steps first, never a run's newest complete
// step or its two newest (being written), and nothing at all when that cannot make room.
#include "memstore/eviction.h"

#include <gtest/gtest.h>

namespace endure::memstore {
namespace {

HeldStep step(const std::string& run, int64_t n, uint64_t bytes, bool complete, int64_t written) {
  return {run, n, bytes, complete, written};
}

TEST(Eviction, NothingGoesWhileItFits) {
  std::vector<HeldStep> held = {step("a", 1, 40, true, 1), step("a", 2, 40, true, 2)};
  auto drops = evict_for(held, 80, 200, 100);
  ASSERT_TRUE(drops);
  EXPECT_TRUE(drops->empty());
}

TEST(Eviction, OldestFirstAndOnlyAsManyAsNeeded) {
  std::vector<HeldStep> held = {step("a", 3, 40, true, 3), step("a", 1, 40, true, 1),
                                step("a", 2, 40, true, 2), step("a", 4, 40, false, 4)};
  auto drops = evict_for(held, 160, 200, 60);
  ASSERT_TRUE(drops);
  EXPECT_EQ(*drops, (std::vector<HeldStep>{step("a", 1, 40, true, 1)}));
  drops = evict_for(held, 160, 200, 110);
  ASSERT_TRUE(drops);
  EXPECT_EQ(*drops, (std::vector<HeldStep>{step("a", 1, 40, true, 1), step("a", 2, 40, true, 2)}));
}

TEST(Eviction, KeepsTheNewestCompleteStepAndTheOneBeingWritten) {
  std::vector<HeldStep> held = {step("a", 1, 50, true, 1), step("a", 2, 50, true, 2),
                                step("a", 3, 50, false, 3)};
  EXPECT_FALSE(evictable(held[1], held));
  EXPECT_FALSE(evictable(held[2], held));
  EXPECT_TRUE(evictable(held[0], held));
  // Dropping step 1 frees 50: room for 50 more, never for 51.
  EXPECT_TRUE(evict_for(held, 150, 150, 50));
  EXPECT_FALSE(evict_for(held, 150, 150, 51));
}

TEST(Eviction, AnUnfinishedStepBelowTheNewestCompleteOneGoes) {
  // Step 2 never completed (a save that failed) and step 3 did: 2 is dead weight.
  std::vector<HeldStep> held = {step("a", 2, 70, false, 2), step("a", 3, 50, true, 3)};
  auto drops = evict_for(held, 120, 130, 60);
  ASSERT_TRUE(drops);
  EXPECT_EQ(*drops, (std::vector<HeldStep>{held[0]}));
}

TEST(Eviction, ARunWithNoCompleteStepKeepsEverything) {
  std::vector<HeldStep> held = {step("a", 1, 50, false, 1), step("a", 2, 50, false, 2)};
  EXPECT_FALSE(evictable(held[0], held));
  EXPECT_FALSE(evict_for(held, 100, 120, 30));
}

TEST(Eviction, UnfinishedStepsBelowTheTwoNewestWereGivenUpAndGo) {
  // Commits stopped after step 2 (a peer's store was down): 3 and 4 will never complete,
  // 5 and 6 are being written.
  std::vector<HeldStep> held = {step("a", 2, 10, true, 2), step("a", 3, 10, false, 3),
                                step("a", 4, 10, false, 4), step("a", 5, 10, false, 5),
                                step("a", 6, 10, false, 6)};
  EXPECT_FALSE(evictable(held[0], held));
  EXPECT_TRUE(evictable(held[1], held));
  EXPECT_TRUE(evictable(held[2], held));
  EXPECT_FALSE(evictable(held[3], held));
  EXPECT_FALSE(evictable(held[4], held));
  auto drops = evict_for(held, 50, 50, 20);
  ASSERT_TRUE(drops);
  EXPECT_EQ(*drops, (std::vector<HeldStep>{held[1], held[2]}));
  // With none complete at all, the same.
  held.erase(held.begin());
  EXPECT_TRUE(evictable(held[0], held));
  EXPECT_FALSE(evictable(held[2], held));
}

TEST(Eviction, RunsAreJudgedEachByItsOwnSteps) {
  // b's step 9 is b's newest complete one: it stays however old; a's old step goes.
  std::vector<HeldStep> held = {step("b", 9, 60, true, 1), step("a", 1, 60, true, 2),
                                step("a", 2, 60, true, 3)};
  auto drops = evict_for(held, 180, 200, 70);
  ASSERT_TRUE(drops);
  EXPECT_EQ(*drops, (std::vector<HeldStep>{held[1]}));
}

TEST(Eviction, AnObjectLargerThanTheWholeStoreNeverFits) {
  EXPECT_FALSE(evict_for({}, 0, 100, 101));
  EXPECT_TRUE(evict_for({}, 0, 100, 100));
}

}  // namespace
}  // namespace endure::memstore
