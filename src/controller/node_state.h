// A node's (instance's) state as types, and every transition endured makes in one table.
//
// The store keeps the state as strings (store::InstanceRow::status, recovery_stage,
// lifecycle_status, health); name() gives exactly those strings and parse_*() reads them back.
// The pair (status, recovery stage) is the node's state: the node table below lists each
// change of it with the event written in the same transaction, and check_transition() is
// the test the one transition function runs before it writes. The lifecycle status (what
// the node's scripts reported) has its own small table. docs/node-states.md shows both as
// diagrams; a unit test keeps that page equal to node_state_diagram() and lifecycle_diagram().
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace endure::controller {

// The cloud API's ClusterInstanceStatus, less NotFound (a BatchAddClusterNodes answer, never
// stored), plus Terminated (the status of a row whose instance is gone) and WarmSpare.
enum class NodeStatus {
  kPending,                    // being launched or rebooted
  kRunning,                    // in service
  kFailure,                    // launch or lifecycle failed (or unhealthy, NodeRecovery None)
  kShuttingDown,               // being terminated (scale down, delete, replacement)
  kSystemUpdating,             // UpdateClusterSoftware at work on it
  kDeepHealthCheckInProgress,  // in a StartClusterHealthCheck, in a maintenance reservation
  kWarmSpare,                  // endure's: booted, checked, in no partition, ready to swap in
  kTerminated,                 // gone; the row stays for the record
};

// Where a recovery (InstanceRow::recovery: Reboot or Replace) stands. kNone: none under way.
enum class RecoveryStage { kNone, kRequested, kDrained, kRebooting, kTerminating, kDone };

// What the node's lifecycle scripts reported: OnCreate on a new instance, the boot scripts
// after a reboot (kRebooting until they report).
enum class LifecycleStatus { kNotStarted, kInProgress, kSucceeded, kFailed, kRebooting };

enum class Health { kUnknown, kHealthy, kUnhealthy };

// The strings the store holds: "Pending", ..., "" for RecoveryStage::kNone.
const char* name(NodeStatus status);
const char* name(RecoveryStage stage);
const char* name(LifecycleStatus status);
const char* name(Health health);

// nullopt for a string that names no value. parse_recovery_stage("") is kNone.
std::optional<NodeStatus> parse_node_status(std::string_view text);
std::optional<RecoveryStage> parse_recovery_stage(std::string_view text);
std::optional<LifecycleStatus> parse_lifecycle_status(std::string_view text);
std::optional<Health> parse_health(std::string_view text);

// Every value, in declaration order: for tests and for rendering.
const std::vector<NodeStatus>& all_node_statuses();
const std::vector<RecoveryStage>& all_recovery_stages();
const std::vector<LifecycleStatus>& all_lifecycle_statuses();
const std::vector<Health>& all_healths();

struct NodeState {
  NodeStatus status = NodeStatus::kPending;
  RecoveryStage stage = RecoveryStage::kNone;
  bool operator==(const NodeState&) const = default;
};

// The state of a stored row, from its two strings; nullopt if either names no value.
std::optional<NodeState> parse_node_state(std::string_view status, std::string_view stage);

// "Running/Requested"; "Running" when no recovery is under way.
std::string to_string(const NodeState& state);

// True where a row may end: Terminated always; Failure when the instance was retired
// (terminated_at set). A Failure marked by NodeRecovery None stays live until shut down.
bool is_final(NodeStatus status);

struct NodeTransition {
  std::optional<NodeState> from;  // nullopt: a new instance row
  NodeState to;
  const char* event;  // the (first) event type written with it; "" for none
  const char* why;    // one line
};

// Every change of (status, stage) endured makes, and every event written while they stay
// the same; then the three UpdateClusterSoftware will need. Unique by (from, to, event).
const std::vector<NodeTransition>& node_transitions();

// Ok when (from, to, first_event) is a row of node_transitions(), or when from == to and
// first_event is "" (a change of message, pid or health alone). Otherwise an error with
// code "InvalidTransition" whose message names from, to and the event.
Status check_transition(std::optional<NodeState> from, NodeState to,
                        const std::string& first_event);

struct LifecycleTransition {
  LifecycleStatus from;
  LifecycleStatus to;
  const char* event;  // "" for none
  const char* why;    // one line
};

// Every change of lifecycle_status: the agent's reports (cluster_service.cpp, handle_agent),
// a reboot, and UpdateClusterSoftware's re-run of OnCreate.
const std::vector<LifecycleTransition>& lifecycle_transitions();

// As check_transition, over lifecycle_transitions().
Status check_lifecycle_transition(LifecycleStatus from, LifecycleStatus to,
                                  const std::string& event);

// The tables as Mermaid stateDiagram-v2 text, in table order (docs/node-states.md holds it).
std::string node_state_diagram();
std::string lifecycle_diagram();

}  // namespace endure::controller
