// A node's (instance's) state as types, and every transition endured makes in one table.
//
// The enums themselves are api/states.h's (the store keeps their names and converts at its
// edge). The pair (status, recovery stage) is the node's state: the node table below lists each
// change of it with the event written in the same transaction, and check_transition() is
// the test the one transition function runs before it writes. The lifecycle status (what
// the node's scripts reported) has its own small table. docs/node-states.md shows both as
// diagrams; a unit test keeps that page equal to node_state_diagram() and lifecycle_diagram().
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/states.h"
#include "common/result.h"

namespace endure::controller {

using api::all_healths;
using api::all_lifecycle_statuses;
using api::all_node_statuses;
using api::all_recovery_stages;
using api::ClusterStatus;
using api::Health;
using api::LifecycleStatus;
using api::name;
using api::NodeStatus;
using api::parse_health;
using api::parse_lifecycle_status;
using api::parse_node_status;
using api::parse_recovery_stage;
using api::RecoveryAction;
using api::RecoveryStage;

struct NodeState {
  NodeStatus status = NodeStatus::kPending;
  RecoveryStage stage = RecoveryStage::kNone;
  bool operator==(const NodeState&) const = default;
};

// The state of a stored row, from its two strings; nullopt if either names no value.
std::optional<NodeState> parse_node_state(std::string_view status, std::string_view stage);

// "Running/Requested"; "Running" when no recovery is under way.
std::string to_string(const NodeState& state);

// "Running", or "Running (Reboot under way)" while a recovery is.
std::string status_text(NodeStatus status, std::optional<RecoveryAction> recovery);

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
