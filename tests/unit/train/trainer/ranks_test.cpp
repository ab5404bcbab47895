// The node of every rank from Slurm's variables, as its block distribution places tasks.
#include <gtest/gtest.h>

#include "train/trainer/ranks.h"

namespace endure::train {
namespace {

using Env = std::map<std::string, std::string>;
using Nodes = std::vector<std::string>;

TEST(RankNodes, PlacesTasksBlockwiseOverTheStepsNodes) {
  auto nodes = rank_nodes_from({{"SLURM_STEP_NODELIST", "w-[1-3],c"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1,3"}}, 8);
  ASSERT_TRUE(nodes) << nodes.error().message;
  EXPECT_EQ(*nodes, (Nodes{"w-1", "w-1", "w-2", "w-2", "w-3", "c", "c", "c"}));
}

TEST(RankNodes, FallsBackToTheJobsVariables) {
  auto nodes = rank_nodes_from({{"SLURM_JOB_NODELIST", "n[08-09]"}, {"SLURM_TASKS_PER_NODE", "1(x2)"}}, 2);
  ASSERT_TRUE(nodes) << nodes.error().message;
  EXPECT_EQ(*nodes, (Nodes{"n08", "n09"}));
}

TEST(RankNodes, NoneOutsideSlurm) {
  auto nodes = rank_nodes_from(Env{}, 4);
  ASSERT_TRUE(nodes);
  EXPECT_TRUE(nodes->empty());
}

TEST(RankNodes, CountsThatDoNotPlaceTheWorldAreRefusedNamingTheVariable) {
  for (const char* counts : {"2(x2", "x", "2(x0)", "-1,5", "1,1,", "2(x2),1"}) {
    auto nodes = rank_nodes_from({{"SLURM_STEP_NODELIST", "w-[1-3]"}, {"SLURM_STEP_TASKS_PER_NODE", counts}}, 4);
    ASSERT_FALSE(nodes) << counts;
    EXPECT_EQ(nodes.error().code, "ValidationException");
    EXPECT_NE(nodes.error().message.find("SLURM_STEP_TASKS_PER_NODE"), std::string::npos) << nodes.error().message;
  }
  auto bad = rank_nodes_from({{"SLURM_STEP_NODELIST", "w-[1-"}, {"SLURM_STEP_TASKS_PER_NODE", "1"}}, 1);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("SLURM_STEP_NODELIST"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace endure::train
