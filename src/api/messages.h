// The wire as typed messages: one struct per request and per reply of every action in
// wire.h, with the cloud service's field names (fields.h). Both sides build and read the
// JSON through these, so a field cannot be spelled one way here and another way there.
//
//   auto request = api::NodeRef::from_json(body);   // ValidationException naming the field
//   json reply = api::GetNodeExecTargetReply{name, id, pid}.to_json();
//
// Where several actions share a shape the type has one name and each action an alias
// (DescribeClusterRequest = DeleteClusterRequest = ClusterRef).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/messages_access_keys.h"
#include "api/messages_agent.h"
#include "api/messages_cluster.h"
#include "api/messages_host.h"
#include "api/messages_node.h"
#include "api/messages_training.h"

namespace endure::api {

// An action and the top-level fields of its request and reply, in wire order.
struct ActionFields {
  std::string action;
  std::vector<FieldInfo> request;
  std::vector<FieldInfo> reply;
};

// Every action of wire.h (docs/api.md documents each; a unit test holds them equal).
std::vector<ActionFields> all_actions();

// A message type nested inside requests or replies, and its fields.
struct TypeFields {
  std::string type;
  std::vector<FieldInfo> fields;
};

// Every nested message type (InstanceStatus, NodeDetails, Event, ...).
std::vector<TypeFields> all_types();

// "a, b, c" with the given separator: how an error or a help text lists allowed values.
std::string join_words(std::span<const char* const> words, std::string_view separator);

}  // namespace endure::api
