// provisioning_parameters.json as CreateCluster reads it from the lifecycle folder: any
// bytes, parsed as JSON, checked against a cluster of a controller, a login node and two
// worker groups, then read; what it reads must make a layout and read back the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "spec/cluster_spec.h"
#include "spec/layout.h"
#include "spec/provisioning.h"

namespace {

using endure::json;
namespace spec = endure::spec;

const spec::ClusterSpec& cluster() {
  static const spec::ClusterSpec c = [] {
    json groups = json::array();
    for (auto [name, count] :
         {std::pair{"controller", 1}, {"login", 1}, {"worker-a", 2}, {"worker-b", 3}}) {
      groups.push_back(
          {{"InstanceGroupName", name},
           {"InstanceType", "local.c2"},
           {"InstanceCount", count},
           {"LifeCycleConfig", {{"SourceS3Uri", "/lc"}, {"OnCreate", "on_create.sh"}}}});
    }
    auto parsed = spec::parse_cluster_spec({{"ClusterName", "fuzz"}, {"InstanceGroups", groups}});
    if (!parsed) std::abort();
    return *parsed;
  }();
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto params = json::parse(std::string(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (params.is_discarded()) return 0;
  (void)spec::validate_provisioning(params, cluster());
  auto roles = spec::parse_provisioning(params, cluster());
  if (!roles) return 0;
  // Stored as to_json() and parsed again whenever the cluster is loaded.
  if (!spec::parse_provisioning(roles->to_json(), cluster())) std::abort();
  auto layout = spec::make_layout(cluster(), *roles, 1);
  (void)layout.partitions();
  for (const auto& g : cluster().groups) (void)roles->partition_of(g.name);
  return 0;
}
