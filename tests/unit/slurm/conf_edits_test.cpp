// The seal on endured's slurm.conf and the partitions a person's edit added.
#include "slurm/conf_edits.h"

#include <gtest/gtest.h>

namespace endure::slurm {
namespace {

const std::string kOurs = seal(
    "ClusterName=c\n"
    "NodeName=worker-0 NodeAddr=127.0.1.2\n"
    "PartitionName=dev Nodes=worker-0 Default=YES MaxTime=INFINITE State=UP\n");

TEST(ConfEdits, AFileEnduredWroteIsIntactAndAnyEditBreaksTheSeal) {
  EXPECT_TRUE(seal_intact(kOurs));
  std::string edited = kOurs;
  edited.insert(edited.find("PartitionName"), "# a comment\n");
  EXPECT_FALSE(seal_intact(edited));
  EXPECT_FALSE(seal_intact(kOurs + "PartitionName=mine Nodes=worker-0\n"));
  EXPECT_FALSE(seal_intact("ClusterName=c\n"));  // never sealed
  EXPECT_FALSE(seal_intact(""));
  std::string one_byte = kOurs;
  one_byte[one_byte.find("127")] = '8';
  EXPECT_FALSE(seal_intact(one_byte));
}

TEST(ConfEdits, TheAddedPartitionsAreThoseOursDoesNotDeclare) {
  std::string edited = kOurs +
                       "PartitionName=mine Nodes=worker-0 State=UP\n"
                       "  partitionname=Lower Nodes=worker-0\n"
                       "PartitionName=DEFAULT MaxTime=60\n"
                       "PartitionName=dev Nodes=worker-0 Default=NO\n"
                       "NodeName=extra NodeAddr=127.9.9.9\n";
  EXPECT_EQ(partition_names(edited),
            (std::vector<std::string>{"dev", "mine", "Lower", "DEFAULT", "dev"}));
  EXPECT_EQ(added_partition_lines(kOurs, edited),
            (std::vector<std::string>{"PartitionName=mine Nodes=worker-0 State=UP",
                                      "  partitionname=Lower Nodes=worker-0"}));
  EXPECT_TRUE(added_partition_lines(kOurs, kOurs).empty());
}

TEST(ConfEdits, KeptLinesFollowOursAndTheResultIsSealedAndKeepsThemAgain) {
  std::vector<std::string> kept = {"PartitionName=mine Nodes=worker-0 State=UP"};
  std::string merged = with_lines(kOurs, kept);
  EXPECT_TRUE(seal_intact(merged));
  EXPECT_NE(merged.find("PartitionName=dev"), std::string::npos);
  EXPECT_LT(merged.find("PartitionName=dev"), merged.find("PartitionName=mine"));
  // A later write of ours finds them in the merged file and keeps them once.
  EXPECT_EQ(added_partition_lines(kOurs, merged), kept);
  EXPECT_EQ(with_lines(kOurs, added_partition_lines(kOurs, merged)), merged);
  EXPECT_EQ(with_lines(kOurs, {}), kOurs);
}

}  // namespace
}  // namespace endure::slurm
