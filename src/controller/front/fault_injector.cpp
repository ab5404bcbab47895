#include "controller/front/fault_injector.h"

#include "api/messages.h"
#include "api/wire.h"
#include "common/log.h"
#include "controller/core/lookup.h"

namespace endure::controller {

Result<json> FaultInjector::inject(const json& request) {
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  auto node = find_node(store_, *cluster, request);
  if (!node) return node.error();
  // Read by hand, not through DebugInjectFaultRequest: an unknown Kind is refused only after
  // the drill and running checks below, as endured always has.
  auto kind = required_string(request, api::field::kKind);
  if (!kind) return kind.error();
  const std::string& c = cluster->id;
  const std::string& id = node->instance_id;
  provider::FaultDrill* drill = provider_.fault_drill();
  if (!drill) {
    return make_error(api::kValidationException,
                      "Kind: this cluster's provider makes no fault drills");
  }
  if (!provider_.running(c, id)) {
    return make_error(api::kConflictException, "NodeId: " + node->node_name + " is not running");
  }
  // The fault each drill makes, as the agent or endured will find it; slurmd-kill is the
  // drill's own word for what the agent finds as slurmd-gone.
  std::optional<api::FaultKind> fault = *kind == "slurmd-kill"
                                            ? std::optional(api::FaultKind::kSlurmdGone)
                                            : api::parse_fault_kind(*kind);
  const std::string refused = "Kind: must be one of " + api::join_words(api::kFaultKinds, ", ");
  if (!fault) return invalid(refused);
  Status s;
  std::string what;
  switch (*fault) {
    case api::FaultKind::kCrash:
      s = provider_.terminate(c, id);
      what = "killed the node's pid namespace";
      break;
    case api::FaultKind::kHang:
      s = drill->freeze(c, id);
      what = "stopped every process of the node";
      break;
    case api::FaultKind::kXid:
      s = drill->append_kernel_log(
          c, id, "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, name=, GPU has fallen off the bus.");
      what = "logged an Xid 79 in the node's kernel log";
      break;
    case api::FaultKind::kEcc:
      s = drill->append_kernel_log(
          c, id,
          "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0 "
          "page:0x1234 offset:0x0 grain:32 - OVERFLOW)");
      what = "logged an uncorrectable memory error in the node's kernel log";
      break;
    case api::FaultKind::kDiskFull:
      s = drill->fill_local_disk(c, id);
      what = "filled the node's local disk";
      break;
    case api::FaultKind::kFsxHang:
      s = drill->hang_shared_fs(c, id);
      what = "made /fsx unresponsive on the node";
      break;
    case api::FaultKind::kSlurmdGone:
      s = drill->kill_slurmd(c, id);
      what = "killed the node's slurmd";
      break;
    default:  // no drill makes it
      return invalid(refused);
  }
  if (!s) return s.error();
  // The fault is made: its record failing is logged, not the drill.
  auto recorded = store_.append_event({0, c, 0, "Instance", node->group, id, node->node_name,
                                       "FaultInjected", *kind + ": " + what});
  if (!recorded) log::error("{}: record the fault: {}", node->node_name, recorded.error().message);
  return api::DebugInjectFaultReply{node->node_name, id, *kind, what}.to_json();
}

}  // namespace endure::controller
