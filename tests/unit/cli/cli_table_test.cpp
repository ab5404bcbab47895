// The CLI's `--output table` formatter: alignment, separators, and JSON cells.
#include <gtest/gtest.h>

#include <sstream>

#include "api/messages.h"
#include "cli/table.h"

namespace endure::cli {
namespace {

TEST(FormatTable, SizesColumnsToTheWidestCell) {
  std::string out = format_table({"Name", "Status"}, {{"worker-10", "Running"}, {"c", "Pending"}});
  EXPECT_EQ(out,
            "Name       Status\n"
            "---------  -------\n"
            "worker-10  Running\n"
            "c          Pending\n");
}

TEST(FormatTable, HeaderWiderThanCells) {
  EXPECT_EQ(format_table({"InstanceCount", "X"}, {{"1", "2"}}),
            "InstanceCount  X\n"
            "-------------  -\n"
            "1              2\n");
}

TEST(FormatTable, NoRowsIsHeaderAndSeparator) {
  EXPECT_EQ(format_table({"A", "Bb"}, {}), "A  Bb\n-  --\n");
}

TEST(FormatTable, NoHeadersIsNothing) { EXPECT_EQ(format_table({}, {{"x"}}), ""); }

TEST(FormatTable, NoTrailingSpacesWhenLastCellIsShortOrEmpty) {
  std::string out = format_table({"A", "Message"}, {{"x", ""}, {"y", "long message"}});
  EXPECT_EQ(out,
            "A  Message\n"
            "-  ------------\n"
            "x\n"
            "y  long message\n");
}

TEST(FormatTable, ShortRowsAreFilledAndLongRowsCut) {
  EXPECT_EQ(format_table({"A", "B", "C"}, {{"1"}, {"1", "2", "3", "4"}}),
            "A  B  C\n"
            "-  -  -\n"
            "1\n"
            "1  2  3\n");
}

TEST(FormatTable, NewlinesAndTabsInCellsBecomeSpaces) {
  EXPECT_EQ(format_table({"Message"}, {{"exit 3\nsee\tlog"}}),
            "Message\n"
            "--------------\n"
            "exit 3 see log\n");
}

TEST(FormatTable, WidthCountsCodePointsNotBytes) {
  // "é" is two bytes but one column.
  EXPECT_EQ(display_width("tiny-é"), 6u);
  EXPECT_EQ(format_table({"Name", "S"}, {{"tiny-é", "x"}, {"abcdefg", "y"}}),
            "Name     S\n"
            "-------  -\n"
            "tiny-é   x\n"
            "abcdefg  y\n");
}

TEST(FindPath, WalksDottedKeys) {
  json node = {{"InstanceStatus", {{"Status", "Running"}}}, {"Name", "w"}};
  ASSERT_NE(find_path(node, "InstanceStatus.Status"), nullptr);
  EXPECT_EQ(*find_path(node, "InstanceStatus.Status"), "Running");
  EXPECT_EQ(find_path(node, "InstanceStatus.Message"), nullptr);
  EXPECT_EQ(find_path(node, "Name.Deeper"), nullptr);
  EXPECT_EQ(find_path(node, "Missing"), nullptr);
  EXPECT_EQ(find_path(node, ""), &node);
}

TEST(CellText, RendersEachKindOfValue) {
  json values = {{"s", "text"}, {"i", 4}, {"b", true}, {"n", nullptr}, {"o", {{"k", 1}}}};
  EXPECT_EQ(cell_text(find_path(values, "s")), "text");
  EXPECT_EQ(cell_text(find_path(values, "i")), "4");
  EXPECT_EQ(cell_text(find_path(values, "b")), "true");
  EXPECT_EQ(cell_text(find_path(values, "n")), "-");
  EXPECT_EQ(cell_text(find_path(values, "missing")), "-");
  EXPECT_EQ(cell_text(find_path(values, "o")), "{\"k\":1}");
}

TEST(FormatJsonTable, OneRowPerObjectWithDashForMissingFields) {
  json nodes = json::parse(R"([
    {"NodeName": "worker-1", "InstanceStatus": {"Status": "Running"}, "SlurmPort": 6818},
    {"NodeName": "worker-2"}
  ])");
  std::string out = format_json_table(
      nodes,
      {{"NodeName", "NodeName"}, {"Status", "InstanceStatus.Status"}, {"Port", "SlurmPort"}});
  EXPECT_EQ(out,
            "NodeName  Status   Port\n"
            "--------  -------  ----\n"
            "worker-1  Running  6818\n"
            "worker-2  -        -\n");
}

TEST(FormatJsonTable, NotAnArrayIsNoRows) {
  EXPECT_EQ(format_json_table(json(), {{"A", "A"}}), "A\n-\n");
  EXPECT_EQ(format_json_table(json::object(), {{"A", "A"}}), "A\n-\n");
}

TEST(FormatFields, AlignsValuesAfterTheLongestKey) {
  EXPECT_EQ(format_fields({{"ClusterName", "ml"}, {"ClusterStatus", "InService"}, {"Id", ""}}),
            "ClusterName:   ml\n"
            "ClusterStatus: InService\n"
            "Id:\n");
}

TEST(FormatFields, ValuesStayOnOneLine) {
  EXPECT_EQ(format_fields({{"Message", "a\nb"}}), "Message: a b\n");
}

// describe-cluster-node's table reads the port where endured writes it (it read
// "SlurmPort" once, and the row stayed blank).
TEST(CliTable, DescribeClusterNodeShowsTheSlurmdPort) {
  api::DescribeClusterNodeReply reply;
  reply.node_details.node_name = "worker-0";
  reply.node_details.instance_status = {"Running", ""};
  reply.node_details.slurmd_port = 6818;
  reply.node_details.life_cycle = {"Succeeded", 0, "line one\nline two", "/log"};
  std::ostringstream out;
  print_node(reply.to_json(), out);
  EXPECT_NE(out.str().find("\nSlurmdPort:         6818\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("\nLifeCycleExitCode:  0\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("LastLines:\n  line one\n  line two\n"), std::string::npos);
}

// describe-cluster shows the memory tier as set, and nothing of it when never set.
TEST(CliTable, DescribeClusterShowsTheMemoryTierWhenSet) {
  api::DescribeClusterReply reply;
  reply.cluster_name = "ml";
  reply.cluster_status = "InService";
  reply.node_recovery = "Automatic";
  std::ostringstream never;
  print_cluster(reply.to_json(), never);
  EXPECT_EQ(never.str().find("TieredStorageConfig"), std::string::npos) << never.str();
  reply.tiered_storage_config = api::TieredStorageConfig{api::TieredStorageMode::kEnable, 30};
  std::ostringstream on;
  print_cluster(reply.to_json(), on);
  EXPECT_NE(on.str().find("\nTieredStorageConfig: Enable, 30 % of memory\n"), std::string::npos)
      << on.str();
  reply.tiered_storage_config = api::TieredStorageConfig{api::TieredStorageMode::kDisable, {}};
  std::ostringstream off;
  print_cluster(reply.to_json(), off);
  EXPECT_NE(off.str().find("\nTieredStorageConfig: Disable\n"), std::string::npos) << off.str();
}

TEST(CliTable, ListClusterNodesColumnsAreTheWireFields) {
  api::ListClusterNodesReply reply;
  reply.cluster_node_summaries.push_back(
      {"worker", "i-1", "worker-0-1a2b3c4d", "worker-0", "ml.c5.xlarge", {"Running", ""}, "t0"});
  std::ostringstream out;
  print_nodes(reply.to_json(), out);
  EXPECT_EQ(out.str(),
            "NodeName  InstanceId  NodeLogicalId      InstanceGroupName  InstanceType  Status   "
            "Message  LaunchTime\n"
            "--------  ----------  -----------------  -----------------  ------------  -------  "
            "-------  ----------\n"
            "worker-0  i-1         worker-0-1a2b3c4d  worker             ml.c5.xlarge  Running  "
            "         t0\n");
}

TEST(CliTable, BatchReplyListsEveryNode) {
  api::BatchNodesReply reply{{"i-1"}, {{"i-2", "ConflictException", "busy"}}};
  std::ostringstream out;
  print_batch(reply.to_json(), out);
  EXPECT_EQ(out.str(),
            "NodeId  Result             Message\n"
            "------  -----------------  -------\n"
            "i-1     Successful\n"
            "i-2     ConflictException  busy\n");
}

}  // namespace
}  // namespace endure::cli
