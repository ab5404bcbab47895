// The wire's typed messages (src/api/messages.h): every request and reply round-trips
// byte for byte in the order endured writes today, bad fields are named, and
// docs/api.md lists exactly the fields the types have.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "agent/health/deep.h"
#include "agent/health/health_check.h"
#include "api/messages.h"
#include "controller/jobs/auto_resume_manager.h"
#include "spec/cluster_spec.h"

namespace endure::api {
namespace {

// from_json then to_json, twice: the JSON out is the JSON in, byte for byte.
template <class T>
std::string round_trip(const std::string& text) {
  json in = json::parse(text);
  auto first = T::from_json(in);
  if (!first) return "error: " + first.error().message;
  json once = first->to_json();
  auto second = T::from_json(once);
  if (!second) return "error on the second pass: " + second.error().message;
  EXPECT_EQ(second->to_json().dump(), once.dump()) << T::kName;
  return once.dump();
}

using RoundTrip = std::string (*)(const std::string&);

// One action's samples: all optional fields set ("full") and none ("bare"; "" = as full).
struct Sample {
  const char* action;
  RoundTrip request;
  const char* request_full;
  const char* request_bare;
  RoundTrip reply;
  const char* reply_full;
  const char* reply_bare;
};

#define GROUP_SPEC                                                                    \
  R"({"InstanceGroupName":"worker","InstanceType":"ml.c5.xlarge","InstanceCount":2,)" \
  R"("LifeCycleConfig":{"SourceS3Uri":"/lc","OnCreate":"on_create.sh"})"
#define ARN R"({"ClusterArn":"arn:endure:local:cluster/c-1"})"
#define SUMMARY                                                                          \
  R"("InstanceGroupName":"worker","InstanceId":"i-1","NodeName":"worker-0",)"            \
  R"("InstanceType":"ml.c5.xlarge","InstanceStatus":{"Status":"Running","Message":""},)" \
  R"("LaunchTime":"2026-12-02T14:15:00.123Z")"

// The full samples are in the order endured (and the agent, and the supervisor) write.
const std::vector<Sample>& samples() {
  static const std::vector<Sample> all = {
      {kCreateCluster, round_trip<CreateClusterRequest>,
       R"({"ClusterName":"ml","InstanceGroups":[)" GROUP_SPEC
       R"(,"ThreadsPerCore":1,"ExecutionRole":"arn:role","InstanceStorageConfigs":[],)"
       R"("SlurmConfig":{"NodeType":"Compute","PartitionNames":["dev"]},)"
       R"x("ScheduledUpdateConfig":{"ScheduleExpression":"rate(1 day)"},)x"
       R"("HostPool":"rack-a","WarmSpares":1}],)"
       R"("NodeRecovery":"None","TieredStorageConfig":{"Mode":"Enable",)"
       R"("InstanceMemoryAllocationPercentage":20},)"
       R"("Orchestrator":{"Slurm":{"SlurmConfigStrategy":"Merge"}},)"
       R"("NodeProvisioningMode":"Continuous","Tags":[],"VpcConfig":{},)"
       R"("SharedFileSystem":{"DnsName":"fs"}})",
       R"({"ClusterName":"ml","InstanceGroups":[)" GROUP_SPEC "}]}", round_trip<CreateClusterReply>,
       ARN, ""},
      {kDescribeCluster, round_trip<DescribeClusterRequest>, R"({"ClusterName":"ml"})", "",
       round_trip<DescribeClusterReply>,
       R"({"ClusterArn":"arn:endure:local:cluster/c-1","ClusterId":"c-1","ClusterName":"ml",)"
       R"("ClusterStatus":"Failed","CreationTime":"2026-12-02T14:15:00.123Z",)"
       R"("FailureMessage":"no slurmctld","InstanceGroups":[{"InstanceGroupName":"worker",)"
       R"("InstanceType":"ml.c5.xlarge","CurrentCount":1,"TargetCount":2,"LifeCycleConfig":)"
       R"({"SourceS3Uri":"/lc","OnCreate":"on_create.sh"},"ThreadsPerCore":1,"Role":"Worker",)"
       R"("PartitionName":"dev","HostPool":"rack-a","WarmSpares":1,"SlurmConfig":)"
       R"({"NodeType":"Compute"}}],"NodeRecovery":)"
       R"("Automatic","TieredStorageConfig":{"Mode":"Disable"},"Orchestrator":{"Slurm":{}},)"
       R"("NodeProvisioningMode":"Continuous",)"
       R"("SlurmControllerNode":)"
       R"("controller-0","SlurmctldPort":6817,"SharedFolder":"/e/clusters/c-1/fsx"})",
       R"({"ClusterArn":"a","ClusterId":"c-1","ClusterName":"ml","ClusterStatus":"InService",)"
       R"("CreationTime":"t","InstanceGroups":[{"InstanceGroupName":"controller",)"
       R"("InstanceType":"ml.c5.xlarge","CurrentCount":1,"TargetCount":1,"LifeCycleConfig":)"
       R"({"SourceS3Uri":"/lc","OnCreate":"on_create.sh"},"ThreadsPerCore":2,)"
       R"("Role":"Controller"}],"NodeRecovery":"None","SlurmControllerNode":"controller-0",)"
       R"("SlurmctldPort":6817,"SharedFolder":"/fsx"})"},
      {kListClusters, round_trip<ListClustersRequest>, "{}", "", round_trip<ListClustersReply>,
       R"({"ClusterSummaries":[{"ClusterArn":"a","ClusterId":"c-1","ClusterName":"ml",)"
       R"("ClusterStatus":"InService","CreationTime":"2026-12-02T14:15:00.123Z"}]})",
       R"({"ClusterSummaries":[]})"},
      {kListClusterNodes, round_trip<ListClusterNodesRequest>,
       R"({"ClusterName":"ml","InstanceGroupNameContains":"work"})", R"({"ClusterName":"ml"})",
       round_trip<ListClusterNodesReply>, R"({"ClusterNodeSummaries":[{)" SUMMARY "}]}", ""},
      {kDescribeClusterNode, round_trip<DescribeClusterNodeRequest>,
       R"({"ClusterName":"ml","NodeId":"worker-0"})", "", round_trip<DescribeClusterNodeReply>,
       R"({"NodeDetails":{)" SUMMARY
       R"(,"LifeCycleConfig":{"SourceS3Uri":"/lc","OnCreate":"on_create.sh"},)"
       R"("ThreadsPerCore":1,"LifeCycle":{"Status":"Succeeded","ExitCode":0,"LastLines":"ok\n",)"
       R"("LogPath":"/l/i-1.log"},"PrivatePrimaryIp":"127.0.1.2","PrivateDnsHostname":)"
       R"("worker-0","SlurmdPort":6818,"Role":"Worker","TerminationTime":"2026-12-02T15:00:00Z",)"
       R"("SecondsSinceHeartbeat":0.5,"Health":"Unhealthy","LastVerdict":"Unhealthy: hang",)"
       R"("Recovery":{"Action":"Replace","Reason":"hang","Stage":"Requested"},"Replaces":"i-0"}})",
       R"({"NodeDetails":{)" SUMMARY
       R"(,"LifeCycle":{"Status":"InProgress","LastLines":"","LogPath":"/l/i-1.log"},)"
       R"("Health":"Unknown"}})"},
      {kUpdateCluster, round_trip<UpdateClusterRequest>,
       R"({"ClusterName":"ml","InstanceGroups":[)" GROUP_SPEC
       R"(,"ThreadsPerCore":1}],"NodeRecovery":"None","TieredStorageConfig":{"Mode":"Enable",)"
       R"("InstanceMemoryAllocationPercentage":0},)"
       R"("Orchestrator":{"Slurm":{"SlurmConfigStrategy":"Overwrite"}},)"
       R"("NodeProvisioningMode":"Continuous","SharedFileSystem":{"DnsName":"fs"}})",
       R"({"ClusterName":"ml","InstanceGroups":[)" GROUP_SPEC "}]}", round_trip<UpdateClusterReply>,
       ARN, ""},
      {kUpdateClusterSoftware, round_trip<UpdateClusterSoftwareRequest>,
       R"({"ClusterName":"ml","InstanceGroups":["worker"],"DeploymentConfig":{)"
       R"("RollingUpdatePolicy":{"MaximumBatchSize":{"Type":"INSTANCE_COUNT","Value":1}},)"
       R"("WaitIntervalInSeconds":5},"ImageId":"x"})",
       R"({"ClusterName":"ml"})", round_trip<UpdateClusterSoftwareReply>, ARN, ""},
      {kDeleteCluster, round_trip<DeleteClusterRequest>, R"({"ClusterName":"ml"})", "",
       round_trip<DeleteClusterReply>, ARN, ""},
      {kListClusterEvents, round_trip<ListClusterEventsRequest>,
       R"({"ClusterName":"ml","NodeName":"worker-0","AfterEventId":10,"MaxResults":100})",
       R"({"ClusterName":"ml"})", round_trip<ListClusterEventsReply>,
       R"({"Events":[{"EventId":11,"ClusterName":"ml","ClusterArn":"a","ResourceType":)"
       R"("Instance","InstanceGroupName":"worker","InstanceId":"i-1","NodeName":"worker-0",)"
       R"("EventTime":"t","EventType":"NodeUnhealthy","Description":"hang"}]})",
       R"({"Events":[{"EventId":1,"ClusterName":"ml","ClusterArn":"a","ResourceType":)"
       R"("Cluster","EventTime":"t","EventType":"ClusterCreating","Description":"accepted"}]})"},
      {kDescribeClusterEvent, round_trip<DescribeClusterEventRequest>,
       R"({"ClusterName":"ml","EventId":11})", "", round_trip<DescribeClusterEventReply>,
       R"({"Event":{"EventId":11,"ClusterName":"ml","ClusterArn":"a","ResourceType":)"
       R"("Instance","InstanceGroupName":"worker","InstanceId":"i-1","NodeName":"worker-0",)"
       R"("EventTime":"t","EventType":"NodeUnhealthy","Description":"hang"}})",
       R"({"Event":{"EventId":1,"ClusterName":"ml","ClusterArn":"a","ResourceType":)"
       R"("Cluster","EventTime":"t","EventType":"ClusterCreating","Description":"accepted"}})"},
      {kGetClusterNodeLog, round_trip<GetClusterNodeLogRequest>,
       R"({"ClusterName":"ml","NodeId":"i-1"})", "", round_trip<GetClusterNodeLogReply>,
       R"({"NodeName":"worker-0","InstanceId":"i-1","LogPath":"/l","Log":"a\nb\n"})", ""},
      {kGetNodeExecTarget, round_trip<GetNodeExecTargetRequest>,
       R"({"ClusterName":"ml","NodeId":"worker-0"})", "", round_trip<GetNodeExecTargetReply>,
       R"({"NodeName":"worker-0","InstanceId":"i-1","Pid":4242})", ""},
      {kBatchRebootClusterNodes, round_trip<BatchRebootClusterNodesRequest>,
       R"({"ClusterName":"ml","NodeIds":["i-1","i-2"]})", "",
       round_trip<BatchRebootClusterNodesReply>,
       R"({"Successful":["i-1"],"Failed":[{"NodeId":"i-2","Code":"ConflictException",)"
       R"("Message":"busy"}]})",
       ""},
      {kBatchReplaceClusterNodes, round_trip<BatchReplaceClusterNodesRequest>,
       R"({"ClusterName":"ml","NodeIds":["i-1"]})", "", round_trip<BatchReplaceClusterNodesReply>,
       R"({"Successful":["i-1"],"Failed":[]})", ""},
      {kBatchDeleteClusterNodes, round_trip<BatchDeleteClusterNodesRequest>,
       R"({"ClusterName":"ml","NodeIds":["i-1","i-2"]})", "",
       round_trip<BatchDeleteClusterNodesReply>,
       R"({"Successful":["i-1"],"Failed":[{"NodeId":"i-2","Code":"InvalidNodeStatus",)"
       R"("Message":"controller"}]})",
       ""},
      {kStartClusterHealthCheck, round_trip<StartClusterHealthCheckRequest>,
       R"({"ClusterName":"ml","NodeIds":["worker-0"]})", R"({"ClusterName":"ml"})",
       round_trip<StartClusterHealthCheckReply>,
       R"({"HealthCheckId":"hc-1","Reservation":"endure-hc-1","Nodes":["worker-0","worker-1"]})",
       ""},
      {kDebugInjectFault, round_trip<DebugInjectFaultRequest>,
       R"({"ClusterName":"ml","NodeId":"worker-0","Kind":"fsx-hang"})", "",
       round_trip<DebugInjectFaultReply>,
       R"({"NodeName":"worker-0","InstanceId":"i-1","Kind":"fsx-hang","Description":"hung"})", ""},
      {kDebugDescribeController, round_trip<DebugDescribeControllerRequest>, "{}", "",
       round_trip<DebugDescribeControllerReply>, R"({"ReconcilePasses":12})", ""},
      {kRegisterHostPools, round_trip<RegisterHostPoolsRequest>,
       R"({"Pools":[{"PoolName":"rack-a","Hosts":[{"HostName":"gpu-01","Address":"a"}]}]})", "",
       round_trip<RegisterHostPoolsReply>,
       R"({"HostSummaries":[{"HostName":"gpu-01","PoolName":"rack-a","Address":"a","Port":22,)"
       R"("State":"InUse","ClusterId":"c-1","InstanceId":"i-1"}]})",
       R"({"HostSummaries":[{"HostName":"gpu-01","PoolName":"rack-a","Address":"a","Port":22,)"
       R"("State":"Available"}]})"},
      {kListHosts, round_trip<ListHostsRequest>, R"({"PoolName":"rack-a"})", "{}",
       round_trip<ListHostsReply>,
       R"({"HostSummaries":[{"HostName":"gpu-02","PoolName":"rack-a","Address":"b","Port":2222,)"
       R"("State":"Quarantined","Reason":"xid 79"}]})",
       R"({"HostSummaries":[]})"},
      {kReturnHost, round_trip<ReturnHostRequest>, R"({"HostName":"gpu-02"})", "",
       round_trip<ReturnHostReply>,
       R"({"Host":{"HostName":"gpu-02","PoolName":"rack-a","Address":"b","Port":2222,)"
       R"("State":"Available"}})",
       ""},
      {kAgentReportLifecycle, round_trip<AgentReportLifecycleRequest>,
       R"({"Status":"Succeeded","ExitCode":0,"LastLines":"done\n","InstanceId":"i-1"})", "",
       round_trip<AgentReportLifecycleReply>, "{}", ""},
      {kAgentHeartbeat, round_trip<AgentHeartbeatRequest>,
       R"({"InstanceId":"i-1","Findings":[{"Kind":"xid","Check":"kernel-log","Detail":"79"}],)"
       R"("Metrics":{"load1":0.5}})",
       "", round_trip<AgentHeartbeatReply>,
       R"({"DeepHealthCheck":{"Id":"hc-1","Reservation":"endure-hc-1","Address":"127.0.1.2",)"
       R"("Port":15000,"Started":1767225600.5,"Peer":"127.0.1.3"}})",
       "{}"},
      {kAgentReportFindings, round_trip<AgentReportFindingsRequest>,
       R"({"InstanceId":"i-1","Findings":[{"RecordId":"kmsg:1042","Kind":"xid",)"
       R"("Check":"kernel-log","Detail":"Xid 79: gone"}]})",
       "", round_trip<AgentReportFindingsReply>, "{}", ""},
      {kAgentReportDeepHealthCheck, round_trip<AgentReportDeepHealthCheckRequest>,
       R"({"InstanceId":"i-1","Id":"hc-1","Results":[{"Check":"cpu","Passed":true,)"
       R"("Detail":"","Metrics":{"gflops":12.5}}]})",
       "", round_trip<AgentReportDeepHealthCheckReply>, "{}", ""},
      {kAutoResumeStepFailed, round_trip<AutoResumeStepFailedRequest>,
       R"({"ClusterName":"ml","JobId":7,"Nodes":["worker-0"],"NodeList":"worker-[0-1]",)"
       R"("StepStartTime":1767225600.25,"FailedAt":1767225610.5,"Resumes":0,"ExitStatus":1,)"
       R"("Succeeded":true,"LackingNodes":["worker-1"]})",
       R"({"ClusterName":"ml","JobId":7,"Nodes":["worker-0"],"StepStartTime":1767225600.25,)"
       R"("FailedAt":1767225610.5,"Resumes":1})",
       round_trip<AutoResumeStepFailedReply>,
       R"({"Decision":"Fault","Reason":"worker-0: hang","FaultyNodes":["worker-0"],)"
       R"("Resume":true,"MaxResumes":3,"ResumeCount":1})",
       ""},
      {kAutoResumeStatus, round_trip<AutoResumeStatusRequest>, R"({"ClusterName":"ml","JobId":7})",
       "", round_trip<AutoResumeStatusReply>,
       R"({"JobId":7,"State":"Ready","Mode":"Expand","ResumeCount":1,"Reason":"hang",)"
       R"("Message":"job holds worker-0 again","Nodes":["worker-0"],"FaultTime":1767225610.5,)"
       R"("ReadyTime":1767225620.25,"Overlap":false,"MaxResumes":3})",
       R"({"State":"None","ResumeCount":0,"Reason":"","Message":"","MaxResumes":3})"},
      {kReportTrainingMetrics, round_trip<ReportTrainingMetricsRequest>,
       R"({"ClusterName":"ml","JobId":7,"Records":[{"loss":3.5,"step":1,"time":1767225610.5}]})",
       "", round_trip<ReportTrainingMetricsReply>, R"({"Accepted":1})", ""},
      {kListTrainingRuns, round_trip<ListTrainingRunsRequest>, R"({"ClusterName":"ml"})", "",
       round_trip<ListTrainingRunsReply>,
       R"({"TrainingRuns":[{"JobId":7,"FirstTime":1767225600.5,"LastTime":1767225610.5,)"
       R"("LastStep":12,"Loss":3.5,"TokensPerSecond":2780.5,"Mfu":0.25,"Resumes":1,)"
       R"("Status":"Running"}]})",
       R"({"TrainingRuns":[]})"},
      {kGetTrainingMetrics, round_trip<GetTrainingMetricsRequest>,
       R"({"ClusterName":"ml","JobId":7,"MaxPoints":100})", R"({"ClusterName":"ml","JobId":7})",
       round_trip<GetTrainingMetricsReply>,
       R"({"JobId":7,"Points":[{"Step":1,"Time":1767225610.5,"Loss":3.5,"TokensPerSecond":2780.5,)"
       R"("Mfu":0.25,"Resume":0}],"Evals":[{"Step":10,"ValLoss":3.25}],)"
       R"("Checkpoints":[{"Step":10,"Time":1767225620.5,"StallSeconds":0.5}],)"
       R"("Starts":[{"Time":1767225600.5,"ResumedFrom":10,"Resume":1,"Reason":"hang"}]})",
       R"({"JobId":7,"Points":[],"Evals":[],"Checkpoints":[],"Starts":[]})"},
      {kListClusterJobs, round_trip<ListClusterJobsRequest>, R"({"ClusterName":"ml"})", "",
       round_trip<ListClusterJobsReply>,
       R"({"Jobs":[{"JobId":7,"State":"Ready","Mode":"Expand","Resumes":1,"Reason":"hang",)"
       R"("Nodes":["worker-0"],"FaultTime":1767225610.5,"ReadyTime":1767225620.25,)"
       R"("Message":"job holds worker-0 again"}]})",
       R"({"Jobs":[]})"},
      {kBatchAddClusterNodes, round_trip<BatchAddClusterNodesRequest>,
       R"({"ClusterName":"ml","ClientToken":"t-1","NodesToAdd":[{"InstanceGroupName":"worker",)"
       R"("IncrementTargetCountBy":2,"AvailabilityZones":[],"InstanceTypes":["ml.c5.xlarge"]}]})",
       R"({"ClusterName":"ml","NodesToAdd":[{"InstanceGroupName":"worker",)"
       R"("IncrementTargetCountBy":1}]})",
       round_trip<BatchAddClusterNodesReply>,
       R"({"Successful":[{"NodeLogicalId":"worker-2-0a1b2c3d","InstanceGroupName":"worker",)"
       R"("Status":"Pending"}],"Failed":[{"InstanceGroupName":"gpu","ErrorCode":)"
       R"("InstanceGroupNotFound","FailedCount":1,"Message":"no such group"}]})",
       R"({"Successful":[],"Failed":[]})"},
  };
  return all;
}

std::vector<std::string> keys(const std::string& text) {
  std::vector<std::string> out;
  const json object = json::parse(text);
  for (const auto& [k, v] : object.items()) out.push_back(k);
  return out;
}

std::vector<std::string> names(const std::vector<FieldInfo>& fields, bool with_optional) {
  std::vector<std::string> out;
  for (const auto& f : fields) {
    if (with_optional || !f.optional) out.push_back(f.name);
  }
  return out;
}

TEST(WireMessages, EveryActionOfWireHasSamplesAndARegistryEntry) {
  std::vector<std::string> registry, sampled;
  for (const auto& a : all_actions()) registry.push_back(a.action);
  for (const auto& s : samples()) sampled.push_back(s.action);
  EXPECT_EQ(registry, sampled);
  EXPECT_EQ(registry.size(), 32u);  // every action of wire.h
}

TEST(WireMessages, EveryMessageRoundTripsWithAllOptionalFieldsAndWithNone) {
  for (const auto& s : samples()) {
    SCOPED_TRACE(s.action);
    for (const char* text : {s.request_full, s.request_bare}) {
      if (*text) {
        EXPECT_EQ(s.request(text), json::parse(text).dump());
      }
    }
    for (const char* text : {s.reply_full, s.reply_bare}) {
      if (*text) {
        EXPECT_EQ(s.reply(text), json::parse(text).dump());
      }
    }
  }
}

TEST(WireMessages, RegistryNamesExactlyTheFieldsTheTypesWrite) {
  auto actions = all_actions();
  for (size_t i = 0; i < actions.size(); ++i) {
    const auto& s = samples()[i];
    SCOPED_TRACE(s.action);
    // The full samples set every optional field; the bare ones hold every required one.
    EXPECT_EQ(keys(s.request_full), names(actions[i].request, true));
    EXPECT_EQ(keys(s.reply_full), names(actions[i].reply, true));
    for (const char* bare : {s.request_bare, s.reply_bare}) {
      if (!*bare) continue;
      auto have = keys(bare);
      for (const auto& r :
           names(bare == s.request_bare ? actions[i].request : actions[i].reply, false)) {
        EXPECT_NE(std::find(have.begin(), have.end(), r), have.end()) << r;
      }
    }
  }
}

void expect_rejected(const Error& e, const std::string& message) {
  EXPECT_EQ(e.code, kValidationException);
  EXPECT_EQ(e.message, message);
}

TEST(WireMessages, WrongTypedFieldIsNamedWithItsPath) {
  expect_rejected(NodeRef::from_json(json::parse(R"({"ClusterName":5,"NodeId":"x"})")).error(),
                  "ClusterName: must be a string");
  expect_rejected(NodeRef::from_json(json::parse(R"({"ClusterName":"ml"})")).error(),
                  "NodeId: is required");
  auto reply = json::parse(R"({"NodeDetails":{)" SUMMARY
                           R"(,"LifeCycle":{"Status":"x","LastLines":"","LogPath":"p"},)"
                           R"("Health":"Unknown","SlurmdPort":"6818"}})");
  expect_rejected(DescribeClusterNodeReply::from_json(reply).error(),
                  "NodeDetails.SlurmdPort: must be an integer");
  reply["NodeDetails"]["InstanceStatus"]["Status"] = 1;
  expect_rejected(DescribeClusterNodeReply::from_json(reply).error(),
                  "NodeDetails.InstanceStatus.Status: must be a string");
  auto nodes = json::parse(R"({"ClusterNodeSummaries":[{)" SUMMARY "},{" SUMMARY "}]}");
  nodes["ClusterNodeSummaries"][1]["LaunchTime"] = false;
  expect_rejected(ListClusterNodesReply::from_json(nodes).error(),
                  "ClusterNodeSummaries[1].LaunchTime: must be a string");
  expect_rejected(
      ListClusterEventsRequest::from_json(json::parse(R"({"ClusterName":"ml","AfterEventId":1.5})"))
          .error(),
      "AfterEventId: must be an integer");
  expect_rejected(AutoResumeStatusReply::from_json(json::parse("[]")).error(),
                  "AutoResumeStatusReply: must be a JSON object");
}

TEST(WireMessages, RulesBeyondTypesAreWordedAsEnduredWordsThem) {
  json batch = {{"ClusterName", "ml"}, {"NodeIds", json::array()}};
  expect_rejected(BatchNodesRequest::from_json(batch).error(),
                  "NodeIds: must be an array of 1 to 25 instance ids");
  for (int i = 0; i < kMaxBatchNodes; ++i) batch["NodeIds"].push_back("i-" + std::to_string(i));
  EXPECT_TRUE(BatchNodesRequest::from_json(batch).ok());
  batch["NodeIds"].push_back("one-too-many");
  EXPECT_FALSE(BatchNodesRequest::from_json(batch).ok());
  expect_rejected(
      DebugInjectFaultRequest::from_json({{"ClusterName", "ml"}, {"NodeId", "w"}, {"Kind", "x"}})
          .error(),
      "Kind: must be one of crash, hang, xid, ecc, disk-full, slurmd-kill, fsx-hang");
  expect_rejected(
      ListClusterEventsRequest::from_json({{"ClusterName", "ml"}, {"MaxResults", 0}}).error(),
      "MaxResults: must be an integer from 1 to 10000");
  expect_rejected(AutoResumeStatusRequest::from_json({{"ClusterName", "ml"}, {"JobId", 0}}).error(),
                  "JobId: must be a positive integer");
  expect_rejected(ClusterRef::from_json({{"ClusterName", ""}}).error(),
                  "ClusterName: must be a non-empty string");
  expect_rejected(AgentReportLifecycleRequest::from_json(
                      {{"Status", "Done"}, {"ExitCode", 0}, {"LastLines", ""}, {"InstanceId", "i"}})
                      .error(),
                  "Status: must be one of InProgress, Succeeded, Failed");
}

// TieredStorageConfig's Mode is an enum on the wire; its share a bounded integer.
TEST(WireMessages, TieredStorageConfigIsNamedWithItsPath) {
  json request = json::parse(R"({"ClusterName":"ml","InstanceGroups":[)" GROUP_SPEC "}]}");
  request["TieredStorageConfig"] = {{"Mode", "On"}};
  expect_rejected(CreateClusterRequest::from_json(request).error(),
                  "TieredStorageConfig.Mode: must be one of Enable, Disable");
  request["TieredStorageConfig"] = {{"InstanceMemoryAllocationPercentage", 20}};
  expect_rejected(UpdateClusterRequest::from_json(request).error(),
                  "TieredStorageConfig.Mode: is required");
  request["TieredStorageConfig"] = {{"Mode", "Enable"},
                                    {"InstanceMemoryAllocationPercentage", 101}};
  expect_rejected(CreateClusterRequest::from_json(request).error(),
                  "TieredStorageConfig.InstanceMemoryAllocationPercentage: must be an integer "
                  "from 0 to 100");
  request["TieredStorageConfig"] = {{"Mode", "Enable"},
                                    {"InstanceMemoryAllocationPercentage", "20"}};
  expect_rejected(CreateClusterRequest::from_json(request).error(),
                  "TieredStorageConfig.InstanceMemoryAllocationPercentage: must be an integer");

  request["TieredStorageConfig"] = {{"Mode", "Disable"}};
  auto parsed = CreateClusterRequest::from_json(request);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_TRUE(parsed->tiered_storage_config.has_value());
  EXPECT_EQ(parsed->tiered_storage_config->mode, TieredStorageMode::kDisable);
  EXPECT_FALSE(parsed->tiered_storage_config->instance_memory_allocation_percentage);
  for (TieredStorageMode mode : {TieredStorageMode::kEnable, TieredStorageMode::kDisable}) {
    EXPECT_EQ(parse_tiered_storage_mode(name(mode)), mode);
  }
  EXPECT_FALSE(parse_tiered_storage_mode("enable"));
  EXPECT_EQ(value_names(TieredStorageMode{}), "Enable, Disable");
}

TEST(WireMessages, RepliesIgnoreFieldsTheyDoNotKnow) {
  auto reply = GetNodeExecTargetReply::from_json(
      {{"NodeName", "w"}, {"InstanceId", "i"}, {"Pid", 7}, {"NewField", {1, 2}}});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->pid, 7);
  EXPECT_EQ(reply->to_json().dump(), R"({"NodeName":"w","InstanceId":"i","Pid":7})");
}

// What the agent's health checks, the spec and endured's auto-resume code write today reads
// back unchanged.
TEST(WireMessages, TodaysProducersRoundTripUnchanged) {
  json finding = agent::health::Finding{api::FaultKind::kXid, "kernel-log", "Xid 79"}.to_json();
  EXPECT_EQ(round_trip<Finding>(finding.dump()), finding.dump());
  agent::health::DeepResult deep{"disk", false, "slow", {{"mbps", 3.5}}};
  EXPECT_EQ(round_trip<DeepCheckResult>(deep.to_json().dump()), deep.to_json().dump());

  auto spec = spec::parse_cluster_spec(json::parse(
      R"({"ClusterName":"ml","InstanceGroups":[{"InstanceGroupName":"worker",)"
      R"("InstanceType":"local.c2","InstanceCount":2,"LifeCycleConfig":{"SourceS3Uri":"/lc",)"
      R"("OnCreate":"on_create.sh"},"ThreadsPerCore":2}],"TieredStorageConfig":{"Mode":)"
      R"("Enable"}})"));
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(round_trip<CreateClusterRequest>(spec->to_json().dump()), spec->to_json().dump());

  json none = controller::auto_resume_status_json(std::nullopt, 3);
  EXPECT_EQ(round_trip<AutoResumeStatusReply>(none.dump()), none.dump());
  store::AutoResumeRow row;
  row.job_id = 9;
  row.resumes = 1;
  row.state = "Waiting";
  row.mode = "Requeue";
  row.nodes = json::array({"worker-1"});
  row.fault_time = 17.5;
  json waiting = controller::auto_resume_status_json(row, 3);
  EXPECT_EQ(round_trip<AutoResumeStatusReply>(waiting.dump()), waiting.dump());
}

// docs/api.md: one `### Name` section per action (and per nested type) with lines
// "- Request: `A`, `B?`", "- Reply: ..." (or "- Fields: ..." for a type); `?` marks an
// optional field, and "[]" after a name (a list) is allowed.
std::map<std::string, std::map<std::string, std::vector<FieldInfo>>> read_api_doc() {
  std::ifstream in(std::string(ENDURE_SOURCE_DIR) + "/docs/api.md");
  EXPECT_TRUE(in.good()) << "docs/api.md not found";
  std::map<std::string, std::map<std::string, std::vector<FieldInfo>>> sections;
  std::string line, section;
  const std::regex list_line(R"(^- (Request|Reply|Fields):(.*)$)");
  const std::regex token("`([A-Za-z_][A-Za-z0-9_]*)(\\[\\])?(\\?)?`");
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) {
      section = line.substr(4);
      EXPECT_EQ(sections.count(section), 0u) << "two sections named " << section;
      sections[section];
      continue;
    }
    if (line.rfind("## ", 0) == 0) section.clear();
    std::smatch m;
    if (section.empty() || !std::regex_match(line, m, list_line)) continue;
    auto& fields = sections[section][m[1]];
    std::string rest = m[2];
    for (std::sregex_iterator it(rest.begin(), rest.end(), token), end; it != end; ++it) {
      fields.push_back({(*it)[1], (*it)[3].matched});
    }
  }
  return sections;
}

std::string show(const std::vector<FieldInfo>& fields) {
  std::string out;
  for (const auto& f : fields) out += (out.empty() ? "" : ", ") + f.name + (f.optional ? "?" : "");
  return "[" + out + "]";
}

TEST(WireDocs, ApiMdListsExactlyEachActionsRequestAndReplyFields) {
  auto doc = read_api_doc();
  for (const auto& a : all_actions()) {
    SCOPED_TRACE(a.action);
    ASSERT_EQ(doc.count(a.action), 1u) << "docs/api.md has no ### " << a.action;
    auto& section = doc[a.action];
    EXPECT_EQ(show(section["Request"]), show(a.request)) << "the Request line";
    EXPECT_EQ(show(section["Reply"]), show(a.reply)) << "the Reply line";
  }
}

TEST(WireDocs, ApiMdListsExactlyEachNestedTypesFields) {
  auto doc = read_api_doc();
  for (const auto& t : all_types()) {
    SCOPED_TRACE(t.type);
    ASSERT_EQ(doc.count(t.type), 1u) << "docs/api.md has no ### " << t.type;
    EXPECT_EQ(show(doc[t.type]["Fields"]), show(t.fields));
  }
}

}  // namespace
}  // namespace endure::api
