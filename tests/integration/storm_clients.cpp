#include "storm_clients.h"

#include <set>

#include "api/wire.h"
#include "cluster_fixture.h"
#include "spec/cluster_spec.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

// The clusters the storm creates and deletes: two names, so two small clusters at most.
const std::vector<std::string> kStormClusters = {"storm-a", "storm-b"};

}  // namespace

void StormClients::client(int index) {
  Rng rng(seed_ + static_cast<uint64_t>(index));
  const HttpClient op = e_.client();
  while (Clock::now() < end_) {
    Call call = next_call(rng);
    const auto t0 = Clock::now();
    Result<json> r = call.token ? HttpClient(Endpoint::loopback(e_.port()), *call.token)
                                      .post(api::kPathPrefix + call.action, call.body)
                                : op.post(api::kPathPrefix + call.action, call.body);
    record(call, r, Clock::now() - t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(below(rng, 50)));
  }
}

void StormClients::record(const Call& call, const Result<json>& r, Clock::duration took) {
  std::string problem;
  const std::string code = r ? "OK" : r.error().code;
  if (r) {
    if (call.bad_credential) {
      problem = "accepted a bad credential";
    } else if (!call.valid) {
      problem = "accepted an invalid call";
    } else if (call.check_reply) {
      problem = call.check_reply(*r);
    }
  } else if (code == "ConnectionFailure") {
    if (!endured_killed_) problem = "no answer";
  } else if (call.bad_credential) {
    if (code != api::kUnauthorized) problem = "a bad credential not refused as Unauthorized";
  } else if (code != api::kValidationException && code != api::kResourceNotFound &&
             code != api::kResourceInUse && code != api::kConflictException &&
             code != "UnknownOperation") {
    problem = "an answer no valid or invalid call should get";
  }
  if (took > 20s) problem = "answered after " + std::to_string(took / 1s) + " s";
  std::lock_guard lock(mu_);
  ++calls_;
  ++outcomes_[call.action + " " + code];
  if (took > slowest_) {
    slowest_ = took;
    slowest_action_ = call.action;
  }
  if (!problem.empty() && violations_.size() < 20) {
    violations_.push_back(problem + ": " + call.action + " " + call.body.dump() + " -> " +
                          (r ? r->dump() : code + ": " + r.error().message));
  }
  if (r && call.action == api::kListClusterNodes && call.body.is_object()) {
    learn_nodes(call.body.value("ClusterName", ""), *r);
  }
}

// Caller holds mu_.
void StormClients::learn_nodes(const std::string& cluster, const json& reply) {
  auto& known = nodes_[cluster];
  known.clear();
  for (const auto& n : reply["ClusterNodeSummaries"]) {
    known.push_back({n["NodeName"], n["InstanceId"], n["InstanceStatus"]["Status"]});
  }
}

// The cluster's nodes as endured lists them now, through a call of the storm's own.
std::vector<KnownNode> StormClients::list_nodes(const std::string& cluster) {
  const Call call(api::kListClusterNodes, {{"ClusterName", cluster}}, true);
  const auto t0 = Clock::now();
  auto r = e_.call(call.action, call.body);
  record(call, r, Clock::now() - t0);
  return r ? nodes_of(cluster) : std::vector<KnownNode>{};
}

std::vector<KnownNode> StormClients::nodes_of(const std::string& cluster) {
  std::lock_guard lock(mu_);
  return nodes_[cluster];
}

Call StormClients::next_call(Rng& rng) {
  const int roll = below(rng, 100);
  if (roll < 35) return read_call(rng);
  if (roll < 43) return create_call(rng);
  if (roll < 51) return update_call(rng);
  if (roll < 56) return delete_call(rng);
  if (roll < 64) return batch_recover_call(rng);
  if (roll < 72) return fault_call(rng);
  if (roll < 87) return agent_call(rng);
  if (roll < 95) return bad_operator_call(rng);
  return odd_call(rng);
}

// A cluster name for a read: mostly one that may exist.
json StormClients::any_cluster_name(Rng& rng) {
  const int roll = below(rng, 20);
  if (roll < 10) return main_;
  if (roll < 17) return pick(rng, kStormClusters);
  if (roll < 19) return "storm-none";
  return pick(rng, std::vector<json>{42, "", "bad name!", nullptr});
}

json StormClients::any_node_id(Rng& rng, const std::string& cluster) {
  auto known = nodes_of(cluster);
  if (!known.empty() && chance(rng, 0.8)) {
    const auto& n = pick(rng, known);
    return chance(rng, 0.5) ? n.id : n.name;
  }
  return pick(rng, std::vector<json>{"i-00000000000000000", "worker-9", "", 7});
}

Call StormClients::read_call(Rng& rng) {
  json name = any_cluster_name(rng);
  const std::string cluster = name.is_string() ? name.get<std::string>() : "";
  switch (below(rng, 9)) {
    case 0:
      return {api::kDescribeCluster, {{"ClusterName", name}}, true};
    case 1:
      return {api::kListClusters, json::object(), true};
    case 2:
      return {api::kListClusterNodes, {{"ClusterName", name}}, true};
    case 3:
      return {api::kDescribeClusterNode,
              {{"ClusterName", name}, {"NodeId", any_node_id(rng, cluster)}},
              true};
    case 4: {
      json body = {{"ClusterName", name}};
      if (chance(rng, 0.5)) body["AfterEventId"] = below(rng, 3000);
      if (chance(rng, 0.3)) body["MaxResults"] = below(rng, 20000) - 10;
      if (chance(rng, 0.1)) body["AfterEventId"] = "last";
      return {api::kListClusterEvents, body, true};
    }
    case 5:
      return {api::kDescribeClusterEvent,
              {{"ClusterName", name},
               {"EventId", chance(rng, 0.9) ? json(below(rng, 3000)) : json("1")}},
              true};
    case 6:
      return {api::kGetClusterNodeLog,
              {{"ClusterName", name}, {"NodeId", any_node_id(rng, cluster)}},
              true};
    case 7:
      return {api::kGetNodeExecTarget,
              {{"ClusterName", name}, {"NodeId", any_node_id(rng, cluster)}},
              true};
    default:
      return {api::kDebugDescribeController, json::object(), true};
  }
}

Call StormClients::create_call(Rng& rng) {
  if (heavy_.take()) {
    return {api::kCreateCluster, make_spec(pick(rng, kStormClusters), below(rng, 2)), true};
  }
  json spec = make_spec("storm-bad", 1);
  switch (below(rng, 9)) {
    case 0:
      spec["InstanceGroups"][1]["InstanceCount"] = -1;
      break;
    case 1:
      spec["InstanceGroups"][0]["InstanceCount"] = 2;
      break;
    case 2:
      spec["ClusterName"] = "bad name!";
      break;
    case 3:
      spec.erase("InstanceGroups");
      break;
    case 4:
      spec = make_spec("storm-bad", 1, "/nonexistent/lifecycle");
      break;
    case 5:
      spec = pick(rng, std::vector<json>{json::array(), "spec", 5, nullptr});
      break;
    case 6:  // a name in use
      spec = make_spec(main_, 1);
      break;
    case 7:
      spec["InstanceGroups"][1]["InstanceType"] = "local.none";
      break;
    default:
      spec["InstanceGroups"][1]["InstanceCount"] = spec::kMaxInstancesPerGroup + 1;
  }
  return {api::kCreateCluster, spec};
}

Call StormClients::update_call(Rng& rng) {
  auto update = [](const std::string& cluster, int workers) {
    return json{{"ClusterName", cluster},
                {"InstanceGroups", make_spec(cluster, workers)["InstanceGroups"]}};
  };
  if (heavy_.take()) {
    // The fixture's cluster keeps 1 or 2 workers, the storm's 0 or 1.
    if (chance(rng, 0.5)) return {api::kUpdateCluster, update(main_, 1 + below(rng, 2)), true};
    return {api::kUpdateCluster, update(pick(rng, kStormClusters), below(rng, 2)), true};
  }
  const std::string cluster = chance(rng, 0.7) ? main_ : pick(rng, kStormClusters);
  json body = update(cluster, 1);
  switch (below(rng, 8)) {
    case 0:
      body["InstanceGroups"][1]["InstanceCount"] = spec::kMaxInstancesPerGroup + 1;
      break;
    case 1:
      body["InstanceGroups"][0]["InstanceCount"] = 0;
      break;
    case 2:
      body["InstanceGroups"][1]["InstanceGroupName"] = "gpu";
      break;
    case 3:
      body["InstanceGroups"][1]["InstanceType"] = "local.c4";
      break;
    case 4:
      body.erase("InstanceGroups");
      break;
    case 5:
      body["ClusterName"] = "storm-none";
      break;
    case 6:
      body["NodeRecovery"] = "Sometimes";
      break;
    default:
      body = json::array({body});
  }
  return {api::kUpdateCluster, body};
}

Call StormClients::delete_call(Rng& rng) {
  if (heavy_.take()) {
    return {api::kDeleteCluster, {{"ClusterName", pick(rng, kStormClusters)}}, true};
  }
  return {api::kDeleteCluster,
          pick(rng, std::vector<json>{json{{"ClusterName", "storm-none"}},
                                      json{{"ClusterName", 42}}, json::object(), json("storm-a")})};
}

Call StormClients::batch_recover_call(Rng& rng) {
  const bool replace = chance(rng, 0.25);
  const std::string action =
      replace ? api::kBatchReplaceClusterNodes : api::kBatchRebootClusterNodes;
  const std::string cluster = chance(rng, 0.7) ? main_ : pick(rng, kStormClusters);
  auto known = nodes_of(cluster);
  if (!known.empty() && heavy_.take()) {
    json ids = json::array({pick(rng, known).id});
    if (chance(rng, 0.3)) ids.push_back(pick(rng, known).id);
    Call call{action, {{"ClusterName", cluster}, {"NodeIds", ids}}, true};
    // An id refused is refused for what it is, whatever else is under way.
    call.check_reply = [](const json& reply) -> std::string {
      static const std::set<std::string> codes = {
          "InstanceIdNotFound", "ControllerNodeNotReplaceable", "InvalidInstanceStatus"};
      for (const auto& f : reply["Failed"]) {
        if (!codes.count(f["Code"].get<std::string>())) return "refused an id as " + f.dump();
      }
      return "";
    };
    return call;
  }
  json body = {{"ClusterName", cluster}};
  switch (below(rng, 6)) {
    case 0:
      body["NodeIds"] = json::array();
      break;
    case 1:
      body["NodeIds"] = json(std::vector<std::string>(api::kMaxBatchNodes + 1, "i-1"));
      break;
    case 2:
      body["NodeIds"] = json::array({42});
      break;
    case 3:
      break;  // no NodeIds
    case 4:
      body["ClusterName"] = "storm-none";
      body["NodeIds"] = {"i-00000000000000000"};
      break;
    default: {
      // Well formed but naming no instance: answered, and nothing is recovered.
      Call call{action, body, true};
      call.body["NodeIds"] = {"i-00000000000000000", "i-00000000000000001"};
      call.check_reply = [](const json& reply) -> std::string {
        return reply["Successful"].empty() ? "" : "recovered an instance that is not there";
      };
      return call;
    }
  }
  return {action, body};
}

Call StormClients::fault_call(Rng& rng) {
  const std::string cluster = chance(rng, 0.7) ? main_ : pick(rng, kStormClusters);
  const std::vector<std::string> kinds(api::kFaultKinds.begin(), api::kFaultKinds.end());
  if (heavy_.take()) {
    // Running workers only. A controller node cannot be replaced: the faults that call
    // for a replacement leave it unhealthy by design. A node frozen before its scripts
    // report waits out LifecycleTimeoutSeconds (15 min), and a slot whose new instances
    // fail twice fails its cluster: both by design, neither what a storm should wait on.
    std::vector<std::string> workers;
    for (const auto& n : list_nodes(cluster)) {
      if (n.name.rfind("worker-", 0) == 0 && n.status == "Running") workers.push_back(n.name);
    }
    if (!workers.empty()) {
      return {
          api::kDebugInjectFault,
          {{"ClusterName", cluster}, {"NodeId", pick(rng, workers)}, {"Kind", pick(rng, kinds)}},
          true};
    }
  }
  json body = {{"ClusterName", cluster}, {"NodeId", "worker-0"}, {"Kind", pick(rng, kinds)}};
  switch (below(rng, 5)) {
    case 0:
      body["Kind"] = "meteor";
      break;
    case 1:
      body.erase("Kind");
      break;
    case 2:
      body["Kind"] = 7;
      break;
    case 3:
      body["NodeId"] = "worker-9";
      break;
    default:
      body["ClusterName"] = "storm-none";
  }
  return {api::kDebugInjectFault, body};
}

// An agent's call with a token that is not its own: none, a wrong one, the operator's,
// another instance's or one of an instance since replaced.
Call StormClients::agent_call(Rng& rng) {
  static const std::vector<std::string> actions = {api::kAgentHeartbeat, api::kAgentReportLifecycle,
                                                   api::kAgentReportFindings,
                                                   api::kAgentReportDeepHealthCheck};
  const std::string action = pick(rng, actions);
  auto known = nodes_of(main_);
  json body = json::object();
  std::string id = known.empty() ? "i-00000000000000000" : pick(rng, known).id;
  if (chance(rng, 0.1)) id = "";
  if (!id.empty()) body["InstanceId"] = id;
  if (action == api::kAgentReportLifecycle) {
    body["Status"] = "Failed";
    body["ExitCode"] = 3;
    body["LastLines"] = "storm";
  } else if (action == api::kAgentReportFindings) {
    body["Findings"] = json::array({{{"Kind", "xid"}, {"Detail", "storm"}}});
  } else if (action == api::kAgentReportDeepHealthCheck) {
    body["Id"] = "storm";
  }
  Call call(action, body);
  call.token = "";
  call.bad_credential = true;
  const int roll = below(rng, 4);
  if (roll == 1) call.token = "not-the-token";
  if (roll == 2) call.token = std::nullopt;  // the operator's
  if (roll == 3 && !agent_tokens_.empty()) {
    // Another instance's token, or this one's from before it was replaced.
    const auto& [owner, token] = pick(rng, agent_tokens_);
    call.token = owner == id && !id.empty() ? "not-the-token" : token;
  }
  // A job's calls carry the cluster's auto-resume token; a wrong one is refused as well.
  if (chance(rng, 0.15)) {
    call.action = chance(rng, 0.5) ? api::kAutoResumeStatus : api::kReportTrainingMetrics;
    call.body = {{"ClusterName", main_}, {"JobId", 1}, {"Records", json::array()}};
    call.token = chance(rng, 0.5) ? "" : "not-the-token";
  }
  return call;
}

// An operator call that would change something, without the operator's token.
Call StormClients::bad_operator_call(Rng& rng) {
  std::vector<Call> calls = {
      {api::kDeleteCluster, {{"ClusterName", main_}}},
      {api::kUpdateCluster,
       {{"ClusterName", main_}, {"InstanceGroups", make_spec(main_, 0)["InstanceGroups"]}}},
      {api::kCreateCluster, make_spec("storm-a", 1)},
      {api::kDebugInjectFault, {{"ClusterName", main_}, {"NodeId", "worker-0"}, {"Kind", "crash"}}},
      {api::kBatchRebootClusterNodes, {{"ClusterName", main_}, {"NodeIds", {"i-1"}}}},
      {api::kListClusters, json::object()},
  };
  Call call = pick(rng, calls);
  call.token = chance(rng, 0.5) ? "" : "not-the-token";
  call.bad_credential = true;
  return call;
}

// Actions that do not exist and bodies that are not objects.
Call StormClients::odd_call(Rng& rng) {
  if (chance(rng, 0.5)) return {"NoSuchAction", json::object()};
  return {pick(rng, std::vector<std::string>{api::kDescribeCluster, api::kListClusterNodes,
                                             api::kBatchRebootClusterNodes}),
          pick(rng, std::vector<json>{json::array(), "x", 1.5, nullptr, true})};
}

}  // namespace endure::test
