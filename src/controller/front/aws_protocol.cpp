#include "controller/front/aws_protocol.h"

#include <time.h>

#include <charconv>
#include <cstdio>
#include <set>

#include "api/fields.h"
#include "api/wire.h"
#include "controller/front/aws_listing.h"
#include "controller/front/sigv4.h"

namespace endure::controller::aws {
namespace {

namespace f = api::field;

// The actions of the service's cluster API that endured serves.
const std::set<std::string> kActions = {api::kCreateCluster,
                                        api::kDescribeCluster,
                                        api::kListClusters,
                                        api::kListClusterNodes,
                                        api::kDescribeClusterNode,
                                        api::kUpdateCluster,
                                        api::kUpdateClusterSoftware,
                                        api::kDeleteCluster,
                                        api::kBatchDeleteClusterNodes,
                                        api::kBatchAddClusterNodes,
                                        api::kBatchRebootClusterNodes,
                                        api::kBatchReplaceClusterNodes,
                                        api::kStartClusterHealthCheck,
                                        api::kListClusterEvents,
                                        api::kDescribeClusterEvent};

// Members the model types as timestamps; /v1 writes them as ISO-8601 strings.
const std::set<std::string> kTimestamps = {"CreationTime", "LaunchTime", "EventTime",
                                           "TerminationTime", "LastSoftwareUpdateTime"};

void convert_times(json& value) {
  if (value.is_array()) {
    for (auto& item : value) convert_times(item);
  } else if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (kTimestamps.count(it.key()) && it.value().is_string()) {
        if (auto t = parse_iso_time(it.value().get<std::string>())) it.value() = *t;
      } else {
        convert_times(it.value());
      }
    }
  }
}

// The request without the members this layer reads itself.
json without(const json& request, std::initializer_list<const char*> keys) {
  json out = request;
  for (const char* key : keys) out.erase(key);
  return out;
}

Result<json> list_clusters(const json& request, const Handler& handle) {
  auto page = read_page(request);
  if (!page) return page.error();
  auto reply = handle(api::kListClusters, json::object());
  if (!reply) return reply;
  convert_times(*reply);
  json& list = (*reply)[f::kClusterSummaries];
  if (auto it = request.find("NameContains"); it != request.end()) {
    if (!it->is_string()) return invalid("NameContains: must be a string");
    json kept = json::array();
    for (auto& c : list) {
      if (c.value(f::kClusterName, "").find(it->get<std::string>()) != std::string::npos) {
        kept.push_back(std::move(c));
      }
    }
    list = std::move(kept);
  }
  return list_reply(std::move(list), request, *page,
                    {f::kClusterSummaries, f::kCreationTime, "CreationTimeAfter",
                     "CreationTimeBefore", f::kClusterName});
}

Result<json> list_cluster_nodes(const json& request, const Handler& handle) {
  auto page = read_page(request);
  if (!page) return page.error();
  auto reply = handle(
      api::kListClusterNodes,
      without(request, {"MaxResults", "NextToken", "SortBy", "SortOrder", "CreationTimeAfter",
                        "CreationTimeBefore", "IncludeNodeLogicalIds"}));
  if (!reply) return reply;
  convert_times(*reply);
  json& list = (*reply)[f::kClusterNodeSummaries];
  // A local node's host name is its Slurm node name.
  for (auto& node : list) node[f::kPrivateDnsHostname] = node.value(f::kNodeName, "");
  return list_reply(std::move(list), request, *page,
                    {f::kClusterNodeSummaries, f::kLaunchTime, "CreationTimeAfter",
                     "CreationTimeBefore", f::kNodeName});
}

// EventId is a string in the model, an integer in /v1.
void event_to_model(json& event) {
  if (event.contains(f::kEventId) && event[f::kEventId].is_number_integer()) {
    event[f::kEventId] = std::to_string(event[f::kEventId].get<long long>());
  }
}

Result<json> list_cluster_events(const json& request, const Handler& handle) {
  auto page = read_page(request);
  if (!page) return page.error();
  auto cluster = request.find(f::kClusterName);
  json v1 = {{f::kClusterName, cluster == request.end() ? json() : *cluster},
             {f::kMaxResults, 10000}};
  json events = json::array();
  // Every event, read 10000 at a time (endured's largest page).
  for (long long after = 0;;) {
    v1[f::kAfterEventId] = after;
    auto reply = handle(api::kListClusterEvents, v1);
    if (!reply) return reply;
    json& batch = (*reply)[f::kEvents];
    for (auto& e : batch) events.push_back(std::move(e));
    if (batch.size() < 10000) break;
    after = events.back()[f::kEventId].get<long long>();
  }
  convert_times(events);
  auto text = [&](const char* key) -> Result<std::string> {
    auto it = request.find(key);
    if (it == request.end()) return std::string();
    if (!it->is_string()) return invalid(std::string(key) + ": must be a string");
    return it->get<std::string>();
  };
  auto node = text(f::kNodeId);
  auto group = text(f::kInstanceGroupName);
  auto type = text(f::kResourceType);
  for (const auto* r : {&node, &group, &type}) {
    if (!*r) return r->error();
  }
  json kept = json::array();
  for (auto& e : events) {
    if (!node->empty() && e.value(f::kInstanceId, "") != *node &&
        e.value(f::kNodeName, "") != *node) {
      continue;
    }
    if (!group->empty() && e.value(f::kInstanceGroupName, "") != *group) continue;
    if (!type->empty() && e.value(f::kResourceType, "") != *type) continue;
    event_to_model(e);
    kept.push_back(std::move(e));
  }
  return list_reply(std::move(kept), request, *page,
                    {f::kEvents, f::kEventTime, "EventTimeAfter", "EventTimeBefore", nullptr});
}

Result<json> describe_cluster_event(const json& request, const Handler& handle) {
  json v1 = request;
  auto it = request.find(f::kEventId);
  if (it != request.end() && it->is_string()) {
    std::string id = it->get<std::string>();
    long long n = 0;
    auto [ptr, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
    if (id.empty() || ec != std::errc() || ptr != id.data() + id.size()) {
      return invalid("EventId: must be an EventId from ListClusterEvents (digits)");
    }
    v1[f::kEventId] = n;
  }
  auto reply = handle(api::kDescribeClusterEvent, v1);
  if (!reply) return reply;
  json event = (*reply)[f::kEvent];
  convert_times(event);
  event_to_model(event);
  return json{{"EventDetails", event}};
}

// NodeLogicalIds are endured's NodeIds too; the answers for them come back apart, as
// SuccessfulNodeLogicalIds and FailedNodeLogicalIds.
Result<json> batch_nodes(const std::string& action, const json& request, const Handler& handle) {
  json v1 = without(request, {"NodeLogicalIds"});
  std::set<std::string> logical;
  if (auto it = request.find("NodeLogicalIds"); it != request.end()) {
    if (!it->is_array()) return invalid("NodeLogicalIds: must be an array");
    if (!v1.contains(f::kNodeIds)) v1[f::kNodeIds] = json::array();
    if (!v1[f::kNodeIds].is_array()) return invalid("NodeIds: must be an array");
    for (const auto& id : *it) {
      if (!id.is_string()) return invalid("NodeLogicalIds: every entry must be a string");
      logical.insert(id.get<std::string>());
      v1[f::kNodeIds].push_back(id);
    }
  }
  auto reply = handle(action, v1);
  if (!reply) return reply;
  // Reboot's and replace's failures name their code ErrorCode in the model, delete's Code.
  const char* code = action == api::kBatchDeleteClusterNodes ? f::kCode : "ErrorCode";
  json successful = json::array(), failed = json::array();
  json successful_logical = json::array(), failed_logical = json::array();
  for (auto& id : (*reply)[f::kSuccessful]) {
    (logical.count(id.get<std::string>()) ? successful_logical : successful).push_back(id);
  }
  for (auto& failure : (*reply)[f::kFailed]) {
    json out = {{code, failure[f::kCode]}, {f::kMessage, failure[f::kMessage]}};
    std::string id = failure.value(f::kNodeId, "");
    if (logical.count(id)) {
      out[f::kNodeLogicalId] = id;
      failed_logical.push_back(std::move(out));
    } else {
      out[f::kNodeId] = id;
      failed.push_back(std::move(out));
    }
  }
  json out = {{f::kSuccessful, successful}, {f::kFailed, failed}};
  if (!logical.empty()) {
    out["SuccessfulNodeLogicalIds"] = successful_logical;
    out["FailedNodeLogicalIds"] = failed_logical;
  }
  return out;
}

// The model's InstanceGroups are [{InstanceGroupName}], /v1's the names.
Result<json> update_cluster_software(const json& request, const Handler& handle) {
  json v1 = request;
  if (auto it = request.find(f::kInstanceGroups); it != request.end() && it->is_array()) {
    json names = json::array();
    for (size_t i = 0; i < it->size(); ++i) {
      const json& g = (*it)[i];
      if (!g.is_object() || !g.contains(f::kInstanceGroupName)) {
        return invalid("InstanceGroups[" + std::to_string(i) +
                       "]: must be an object with an InstanceGroupName");
      }
      names.push_back(g[f::kInstanceGroupName]);
    }
    v1[f::kInstanceGroups] = names;
  }
  return handle(api::kUpdateClusterSoftware, v1);
}

// The model names the nodes per group (DeepHealthCheckConfigurations: [{InstanceGroupName,
// InstanceIds?, DeepHealthChecks}]); /v1 takes NodeIds. A group without InstanceIds means
// all its nodes. Endure runs every deep check it has on them.
Result<json> start_cluster_health_check(const json& request, const Handler& handle) {
  auto configs = request.find("DeepHealthCheckConfigurations");
  if (configs == request.end() || !configs->is_array() || configs->empty()) {
    return invalid("DeepHealthCheckConfigurations: is required, an array of 1 to 99 groups");
  }
  const json name = request.value(f::kClusterName, json());
  auto cluster = handle(api::kDescribeCluster, {{f::kClusterName, name}});
  if (!cluster) return cluster;
  auto nodes = handle(api::kListClusterNodes, {{f::kClusterName, name}});
  if (!nodes) return nodes;
  json ids = json::array();
  for (size_t i = 0; i < configs->size(); ++i) {
    const json& c = (*configs)[i];
    std::string where = "DeepHealthCheckConfigurations[" + std::to_string(i) + "]";
    if (!c.is_object() || !c.contains(f::kInstanceGroupName) ||
        !c[f::kInstanceGroupName].is_string()) {
      return invalid(where + ".InstanceGroupName: is required, a string");
    }
    if (auto listed = c.find("InstanceIds"); listed != c.end()) {
      if (!listed->is_array()) return invalid(where + ".InstanceIds: must be an array");
      for (const auto& id : *listed) ids.push_back(id);
      continue;
    }
    for (const auto& n : (*nodes)[f::kClusterNodeSummaries]) {
      if (n.value(f::kInstanceGroupName, "") == c[f::kInstanceGroupName]) {
        ids.push_back(n[f::kInstanceId]);
      }
    }
  }
  auto started =
      handle(api::kStartClusterHealthCheck, {{f::kClusterName, name}, {f::kNodeIds, ids}});
  if (!started) return started;
  return json{{f::kClusterArn, (*cluster)[f::kClusterArn]}};
}

}  // namespace

std::optional<double> parse_iso_time(const std::string& text) {
  int year, month, day, hour, minute, second, millis = 0, used = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &used) != 6) {
    return std::nullopt;
  }
  std::string rest = text.substr(used);
  if (rest.size() == 5 && rest[0] == '.' && rest[4] == 'Z') {
    millis = std::atoi(rest.substr(1, 3).c_str());
  } else if (rest != "Z") {
    return std::nullopt;
  }
  struct tm t = {};
  t.tm_year = year - 1900;
  t.tm_mon = month - 1;
  t.tm_mday = day;
  t.tm_hour = hour;
  t.tm_min = minute;
  t.tm_sec = second;
  return static_cast<double>(timegm(&t)) + millis / 1000.0;
}

Result<json> call(const std::string& action, const json& request, const Handler& handle) {
  if (!kActions.count(action)) {
    return make_error(kUnknownOperation, "endure does not serve SageMaker." + action);
  }
  if (!request.is_object()) return invalid("request: must be a JSON object");
  if (action == api::kListClusters) return list_clusters(request, handle);
  if (action == api::kListClusterNodes) return list_cluster_nodes(request, handle);
  if (action == api::kListClusterEvents) return list_cluster_events(request, handle);
  if (action == api::kDescribeClusterEvent) return describe_cluster_event(request, handle);
  if (action == api::kUpdateClusterSoftware) return update_cluster_software(request, handle);
  if (action == api::kStartClusterHealthCheck) return start_cluster_health_check(request, handle);
  if (action == api::kBatchDeleteClusterNodes || action == api::kBatchRebootClusterNodes ||
      action == api::kBatchReplaceClusterNodes) {
    return batch_nodes(action, request, handle);
  }
  json v1 = request;
  // A NodeLogicalId is one of the names endured's NodeId takes.
  if (action == api::kDescribeClusterNode && request.contains(f::kNodeLogicalId)) {
    if (request.contains(f::kNodeId)) return invalid("NodeId: give NodeId or NodeLogicalId, not both");
    v1 = without(request, {f::kNodeLogicalId});
    v1[f::kNodeId] = request[f::kNodeLogicalId];
  }
  auto reply = handle(action, v1);
  if (reply) convert_times(*reply);
  return reply;
}

int http_status(const std::string& code) {
  // The service answers every client error 400, and the signature errors as its common
  // errors list them.
  static const std::set<std::string> client = {
      api::kValidationException,   api::kResourceNotFound,   api::kResourceInUse,
      api::kConflictException,     kResourceLimitExceeded,   kUnknownOperation,
      sigv4::kIncompleteSignature, "SerializationException", "UnsupportedOperation"};
  if (client.count(code)) return 400;
  if (code == sigv4::kMissingAuthenticationToken || code == sigv4::kUnrecognizedClient ||
      code == sigv4::kInvalidSignature) {
    return 403;
  }
  return 500;
}

json error_body(const Error& error) {
  return {{f::kErrorType, error.code}, {f::kErrorMessage, error.message}};
}

}  // namespace endure::controller::aws
