// The tier order of a restore, with every combination of missing and damaged copies: the
// nearest copy that reads wins, every nearer one is reported with why it was passed over,
// and with none left the error names each.
#include "train/ckpt/restore_order.h"

#include <gtest/gtest.h>

#include <string>

namespace endure::ckpt {
namespace {

enum class State { good, missing, damaged };

TEST(RestoreOrder, NearestFirst) {
  auto order = restore_order("node-2", {"node-3", "node-4"}, "/fsx/ckpt", "s3://bucket/run");
  std::vector<Candidate> want = {{Source::own_store, "node-2"},
                                 {Source::peer_store, "node-3"},
                                 {Source::peer_store, "node-4"},
                                 {Source::disk, "/fsx/ckpt"},
                                 {Source::s3, "s3://bucket/run"}};
  EXPECT_EQ(order, want);
}

TEST(RestoreOrder, TiersLeftOutAreNotTried) {
  EXPECT_EQ(restore_order("", {"node-3"}, "/fsx/ckpt", ""),
            (std::vector<Candidate>{{Source::disk, "/fsx/ckpt"}}));
  EXPECT_EQ(restore_order("node-2", {"node-2"}, "", ""),
            (std::vector<Candidate>{{Source::own_store, "node-2"}}));
  EXPECT_TRUE(restore_order("", {}, "", "").empty());
}

TEST(RestoreOrder, EveryCombinationOfMissingAndDamagedCopies) {
  auto order = restore_order("node-1", {"node-2"}, "/fsx/ckpt", "s3://bucket/run");
  ASSERT_EQ(order.size(), 4u);
  int combinations = 0;
  for (int code = 0; code < 81; ++code, ++combinations) {
    State states[4];
    for (int i = 0, c = code; i < 4; ++i, c /= 3) states[i] = static_cast<State>(c % 3);
    std::vector<std::string> tried;
    std::function<Result<std::string>(const Candidate&)> read = [&](const Candidate& c) -> Result<std::string> {
      tried.push_back(c.where);
      size_t at = static_cast<size_t>(std::find(order.begin(), order.end(), c) - order.begin());
      switch (states[at]) {
        case State::good: return "bytes of " + c.where;
        case State::missing: return make_error("ResourceNotFound", "not held");
        case State::damaged: return make_error("ChecksumMismatch", "chunk 3 differs");
      }
      return make_error("?", "?");
    };
    auto got = restore_first(order, read);
    int first_good = -1;
    for (int i = 0; i < 4 && first_good < 0; ++i)
      if (states[i] == State::good) first_good = i;
    if (first_good < 0) {
      ASSERT_FALSE(got) << code;
      EXPECT_EQ(got.error().code, "NoCopy");
      for (const auto& c : order) EXPECT_NE(got.error().message.find(c.where), std::string::npos) << code;
      EXPECT_EQ(tried.size(), 4u);
      continue;
    }
    ASSERT_TRUE(got) << code;
    EXPECT_EQ(got->from, order[first_good]) << code;
    EXPECT_EQ(got->value, "bytes of " + order[first_good].where);
    // Only the nearer copies were read, each failed for its own reason, and no farther one.
    ASSERT_EQ(got->missed.size(), static_cast<size_t>(first_good)) << code;
    EXPECT_EQ(tried.size(), static_cast<size_t>(first_good) + 1);
    for (int i = 0; i < first_good; ++i) {
      EXPECT_EQ(got->missed[i].from, order[i]);
      EXPECT_EQ(got->missed[i].error.code, states[i] == State::missing ? "ResourceNotFound" : "ChecksumMismatch");
    }
  }
  EXPECT_EQ(combinations, 81);
}

TEST(RestoreOrder, NamesForTheReport) {
  EXPECT_STREQ(name(Source::own_store), "own node");
  EXPECT_STREQ(name(Source::peer_store), "peer");
  EXPECT_STREQ(name(Source::disk), "disk");
  EXPECT_STREQ(name(Source::s3), "s3");
}

}  // namespace
}  // namespace endure::ckpt
