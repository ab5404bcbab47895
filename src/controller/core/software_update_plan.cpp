#include "controller/core/software_update_plan.h"

#include <algorithm>
#include <cmath>

#include "api/wire.h"
#include "common/ids.h"

namespace endure::controller {
namespace {

// An integer field of an object, within [lo, hi].
Result<int> bounded_int(const json& object, const char* field, const std::string& path, int lo,
                        int hi, int fallback) {
  if (!object.contains(field)) return fallback;
  const json& v = object[field];
  if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi) {
    return invalid(path + ": must be an integer from " + std::to_string(lo) + " to " +
                   std::to_string(hi));
  }
  return v.get<int>();
}

}  // namespace

json SoftwareUpdatePlan::to_json() const {
  json flight = json::array();
  for (const auto& f : in_flight)
    flight.push_back({{"Node", f.node}, {"InstanceId", f.instance_id}});
  return {{"Id", id},
          {"InstanceGroups", groups},
          {"BatchSize", batch_size},
          {"WaitIntervalInSeconds", wait_seconds},
          {"Remaining", remaining},
          {"InFlight", flight},
          {"BatchDoneAt", batch_done_at},
          {"LargestBatch", largest_batch}};
}

Result<SoftwareUpdatePlan> SoftwareUpdatePlan::from_json(const json& j) {
  // Written by to_json above; read without exceptions, as everything in a reconcile pass.
  auto broken = [](const char* field) {
    return make_error(api::kInternalFailure, std::string("stored software update: ") + field);
  };
  auto strings = [](const json& v, std::vector<std::string>& out) {
    if (!v.is_array()) return false;
    for (const auto& s : v) {
      if (!s.is_string()) return false;
      out.push_back(s.get<std::string>());
    }
    return true;
  };
  if (!j.is_object()) return broken("not an object");
  SoftwareUpdatePlan p;
  const json id = j.value("Id", json()), batch = j.value("BatchSize", json()),
             wait = j.value("WaitIntervalInSeconds", json()), done = j.value("BatchDoneAt", json()),
             largest = j.value("LargestBatch", json()), flight = j.value("InFlight", json());
  if (!id.is_string()) return broken("Id");
  p.id = id.get<std::string>();
  if (!strings(j.value("InstanceGroups", json()), p.groups)) return broken("InstanceGroups");
  if (!strings(j.value("Remaining", json()), p.remaining)) return broken("Remaining");
  if (!batch.is_number_integer() || !wait.is_number_integer() || !done.is_number() ||
      !largest.is_number_integer() || !flight.is_array()) {
    return broken("BatchSize, WaitIntervalInSeconds, BatchDoneAt, LargestBatch or InFlight");
  }
  p.batch_size = batch.get<int>();
  p.wait_seconds = wait.get<int>();
  p.batch_done_at = done.get<double>();
  p.largest_batch = largest.get<int>();
  for (const auto& f : flight) {
    if (!f.is_object() || !f.value("Node", json()).is_string() ||
        !f.value("InstanceId", json()).is_string()) {
      return broken("InFlight");
    }
    p.in_flight.push_back({f["Node"].get<std::string>(), f["InstanceId"].get<std::string>()});
  }
  return p;
}

Result<SoftwareUpdatePlan> plan_software_update(const json& request,
                                                const spec::ClusterLayout& layout) {
  if (request.contains("ImageId")) {
    return invalid(
        "ImageId: endure's nodes run the software of the host they boot on; "
        "leave ImageId out");
  }
  SoftwareUpdatePlan plan;
  plan.id = "su-" + ids::random_hex(8);
  std::vector<std::string> known;
  for (const auto& n : layout.nodes) {
    if (std::find(known.begin(), known.end(), n.group) == known.end()) known.push_back(n.group);
  }
  if (request.contains("InstanceGroups")) {
    const json& g = request["InstanceGroups"];
    if (!g.is_array() || g.empty()) {
      return invalid("InstanceGroups: must be a non-empty array of instance group names");
    }
    for (size_t i = 0; i < g.size(); ++i) {
      std::string field = "InstanceGroups[" + std::to_string(i) + "]";
      if (!g[i].is_string()) return invalid(field + ": must be a string");
      std::string name = g[i].get<std::string>();
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        return invalid(field + ": the cluster has no instance group " + name + " with instances");
      }
      if (std::find(plan.groups.begin(), plan.groups.end(), name) != plan.groups.end()) {
        return invalid(field + ": " + name + " is named twice");
      }
      plan.groups.push_back(name);
    }
  } else {
    plan.groups = known;
  }
  // Workers and login nodes first, in layout order; the controller node last.
  std::string controller;
  for (const auto& n : layout.nodes) {
    if (std::find(plan.groups.begin(), plan.groups.end(), n.group) == plan.groups.end()) continue;
    if (n.spare) continue;  // not in service: a spare is patched by being replaced
    if (n.node_name == layout.controller_node)
      controller = n.node_name;
    else
      plan.remaining.push_back(n.node_name);
  }
  if (!controller.empty()) plan.remaining.push_back(controller);
  if (plan.remaining.empty()) return invalid("InstanceGroups: no node to update");
  const int total = static_cast<int>(plan.remaining.size());

  if (!request.contains("DeploymentConfig")) return plan;
  const json& dc = request["DeploymentConfig"];
  if (!dc.is_object()) return invalid("DeploymentConfig: must be an object");
  for (const auto& [key, _] : dc.items()) {
    if (key != "RollingUpdatePolicy" && key != "WaitIntervalInSeconds") {
      return invalid("DeploymentConfig." + key +
                     ": not supported (RollingUpdatePolicy and WaitIntervalInSeconds are)");
    }
  }
  auto wait = bounded_int(dc, "WaitIntervalInSeconds", "DeploymentConfig.WaitIntervalInSeconds", 0,
                          kMaxWaitIntervalSeconds, 0);
  if (!wait) return wait.error();
  plan.wait_seconds = *wait;
  if (!dc.contains("RollingUpdatePolicy")) return plan;
  const json& policy = dc["RollingUpdatePolicy"];
  const std::string path = "DeploymentConfig.RollingUpdatePolicy.MaximumBatchSize";
  if (!policy.is_object() || !policy.contains("MaximumBatchSize") ||
      !policy["MaximumBatchSize"].is_object()) {
    return invalid(path + ": is required, an object {Type, Value}");
  }
  const json& size = policy["MaximumBatchSize"];
  // Another type than a string is no known Type either: refused below, not thrown on.
  const json type = size.value("Type", json());
  if (type == "INSTANCE_COUNT") {
    auto n = bounded_int(size, "Value", path + ".Value", 1, total, 0);
    if (!n) return n.error();
    if (*n == 0) return invalid(path + ".Value: is required");
    plan.batch_size = *n;
  } else if (type == "CAPACITY_PERCENTAGE") {
    auto pct = bounded_int(size, "Value", path + ".Value", 1, 100, 0);
    if (!pct) return pct.error();
    if (*pct == 0) return invalid(path + ".Value: is required");
    plan.batch_size = std::max(1, static_cast<int>(std::floor(total * *pct / 100.0)));
  } else {
    return invalid(path + ".Type: must be INSTANCE_COUNT or CAPACITY_PERCENTAGE");
  }
  return plan;
}

std::vector<std::string> next_batch(const SoftwareUpdatePlan& plan,
                                    const spec::ClusterLayout& layout, double now) {
  std::vector<std::string> batch;
  if (!plan.in_flight.empty() || plan.remaining.empty()) return batch;
  if (plan.batch_done_at > 0 && now - plan.batch_done_at < plan.wait_seconds) return batch;
  for (const auto& name : plan.remaining) {
    if (static_cast<int>(batch.size()) >= plan.batch_size) break;
    // The controller node goes alone: its slurmctld restarts, and the others wait for it.
    if (name == layout.controller_node) {
      if (batch.empty()) batch.push_back(name);
      break;
    }
    batch.push_back(name);
  }
  return batch;
}

}  // namespace endure::controller
