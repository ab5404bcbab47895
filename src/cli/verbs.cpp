// Every verb goes the same way: build the request (RequestBuilder), send it and print the
// reply (Session::run). update-cluster's count form and exec add one step each.
#include "cli/verbs.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "api/exec_target.h"
#include "api/messages.h"
#include "api/wire.h"
#include "cli/session.h"
#include "cli/table.h"
#include "common/fs.h"
#include "common/http_client.h"
#include "common/json.h"
#include "common/result.h"

namespace endure::cli {
namespace {

namespace f = api::field;

// A spec file may name its lifecycle folders relative to itself ("../lifecycle/base"):
// the CLI makes such plain paths absolute, since endured does not know where the file was.
void resolve_lifecycle_folders(json& request, const std::filesystem::path& base) {
  if (!request.contains(f::kInstanceGroups) || !request[f::kInstanceGroups].is_array()) return;
  for (auto& group : request[f::kInstanceGroups]) {
    if (!group.is_object() || !group.contains(f::kLifeCycleConfig)) continue;
    auto& lc = group[f::kLifeCycleConfig];
    if (!lc.is_object() || !lc.contains(f::kSourceS3Uri) || !lc[f::kSourceS3Uri].is_string()) {
      continue;
    }
    std::string uri = lc[f::kSourceS3Uri].get<std::string>();
    if (uri.empty() || uri[0] == '/' || uri.find("://") != std::string::npos) continue;
    lc[f::kSourceS3Uri] = (base / uri).lexically_normal().string();
  }
}

constexpr const char* kTieredStorageHelp =
    "the cluster memory tier: {\"Mode\":\"Enable\"|\"Disable\","
    "\"InstanceMemoryAllocationPercentage\":N} (inline or file://PATH; N 0 to 100, default 20)";

void add_create_cluster(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand(
      "create-cluster", "Create a cluster from a spec: --cli-input-json file://spec.json");
  auto request = std::make_shared<RequestBuilder>(verb);
  auto wait = std::make_shared<WaitOptions>();
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name of the new cluster", true);
  request->add(Kind::kJsonArray, "--instance-groups", f::kInstanceGroups,
               "the instance groups as a JSON array (inline or file://PATH)", true);
  request->add(Kind::kText, "--node-recovery", f::kNodeRecovery, "Automatic or None");
  request->add(Kind::kJsonObject, "--tiered-storage-config", f::kTieredStorageConfig,
               kTieredStorageHelp);
  add_wait_options(verb, *wait, "the cluster is InService");
  on_run(verb, selected, [s, request, wait] {
    auto built = request->build();
    if (built) resolve_lifecycle_folders(*built, request->base_folder());
    return s->run(api::kCreateCluster, std::move(built), {print_cluster_arn}, wait.get());
  });
}

void add_describe_cluster(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb =
      app.add_subcommand("describe-cluster", "Show a cluster's status and instance groups");
  auto request = std::make_shared<RequestBuilder>(verb);
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  on_run(verb, selected,
         [s, request] { return s->run(api::kDescribeCluster, request->build(), {print_cluster}); });
}

void add_list_clusters(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand("list-clusters", "List the clusters");
  auto request = std::make_shared<RequestBuilder>(verb);
  on_run(verb, selected,
         [s, request] { return s->run(api::kListClusters, request->build(), {print_clusters}); });
}

void add_list_cluster_nodes(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand("list-cluster-nodes", "List a cluster's nodes");
  auto request = std::make_shared<RequestBuilder>(verb);
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  request->add(Kind::kText, "--instance-group-name-contains", f::kInstanceGroupNameContains,
               "only nodes of groups whose name contains this");
  on_run(verb, selected,
         [s, request] { return s->run(api::kListClusterNodes, request->build(), {print_nodes}); });
}

void add_describe_cluster_node(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand("describe-cluster-node",
                                      "Show one node: its status, lifecycle script and addresses");
  auto request = std::make_shared<RequestBuilder>(verb);
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  request->add(Kind::kText, "--node-id", f::kNodeId, "instance id or node name (e.g. worker-3)",
               true);
  on_run(verb, selected, [s, request] {
    return s->run(api::kDescribeClusterNode, request->build(), {print_node});
  });
}

// UpdateCluster wants every group; this is every group as DescribeCluster shows it, with
// the named groups' counts (and warm spares, when given) replaced.
Result<json> instance_groups_with_counts(const api::DescribeClusterReply& cluster,
                                         const std::vector<std::string>& names,
                                         const std::vector<long long>& counts,
                                         const std::vector<long long>& spares) {
  json groups = json::array();
  std::vector<std::string> have;
  std::set<std::string> found;
  for (const auto& g : cluster.instance_groups) {
    have.push_back(g.instance_group_name);
    api::InstanceGroupSpec spec;
    spec.instance_group_name = g.instance_group_name;
    spec.instance_type = g.instance_type;
    spec.instance_count = g.target_count;
    spec.life_cycle_config = g.life_cycle_config;
    spec.threads_per_core = g.threads_per_core;
    spec.host_pool = g.host_pool;
    spec.warm_spares = g.warm_spares;
    json group = spec.to_json();
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == g.instance_group_name) {
        // As given, not narrowed to int: endured's range check words the error.
        if (i < counts.size()) group[f::kInstanceCount] = counts[i];
        if (i < spares.size()) group[f::kWarmSpares] = spares[i];
        found.insert(names[i]);
      }
    }
    groups.push_back(std::move(group));
  }
  for (const auto& name : names) {
    if (!found.count(name)) {
      return usage("--instance-group-name " + name + ": cluster " + cluster.cluster_name +
                   " has no such instance group (it has: " + join(have, ", ") + ")");
    }
  }
  return groups;
}

void add_update_cluster(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand("update-cluster",
                                      "Change instance counts: of every group (--instance-groups) "
                                      "or of some (--instance-group-name "
                                      "G --instance-count N and/or --warm-spares N, repeatable); "
                                      "or NodeRecovery or TieredStorageConfig alone");
  auto request = std::make_shared<RequestBuilder>(verb);
  auto wait = std::make_shared<WaitOptions>();
  struct Counts {
    std::vector<std::string> names;
    std::vector<long long> counts;
    std::vector<long long> spares;
  };
  auto counts = std::make_shared<Counts>();
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  CLI::Option* groups =
      request->add(Kind::kJsonArray, "--instance-groups", f::kInstanceGroups,
                   "every instance group as a JSON array (inline or file://PATH)");
  request->add(Kind::kText, "--node-recovery", f::kNodeRecovery, "Automatic or None");
  request->add(Kind::kJsonObject, "--tiered-storage-config", f::kTieredStorageConfig,
               kTieredStorageHelp);
  verb->add_option("--instance-group-name", counts->names,
                   "a group whose count --instance-count sets; the others keep theirs")
      ->allow_extra_args(false)
      ->excludes(groups);
  verb->add_option("--instance-count", counts->counts, "the new count of that group")
      ->allow_extra_args(false)
      ->excludes(groups);
  verb->add_option("--warm-spares", counts->spares, "the new WarmSpares of that group")
      ->allow_extra_args(false)
      ->excludes(groups);
  add_wait_options(verb, *wait, "the cluster is InService again");

  on_run(verb, selected, [s, request, wait, counts] {
    auto built = request->build();
    if (!built) return s->report(built.error());
    json& body = *built;
    if (!counts->names.empty() || !counts->counts.empty() || !counts->spares.empty()) {
      const size_t n = counts->names.size();
      bool paired = (!counts->counts.empty() || !counts->spares.empty()) &&
                    (counts->counts.empty() || counts->counts.size() == n) &&
                    (counts->spares.empty() || counts->spares.size() == n);
      if (!paired) {
        return s->report(usage(
            "each --instance-group-name goes with an --instance-count, a --warm-spares, or both "
            "(got " + std::to_string(n) + " names, " + std::to_string(counts->counts.size()) +
            " counts and " + std::to_string(counts->spares.size()) + " warm spares)"));
      }
      // The name as given (any JSON): endured's answer to a bad one is the error shown.
      auto reply = s->call(api::kDescribeCluster, {{f::kClusterName, body[f::kClusterName]}});
      if (!reply) return s->report(reply.error());
      auto cluster = api::DescribeClusterReply::from_json(*reply);
      if (!cluster) {
        return s->report(
            make_error(kFailed, "DescribeCluster's reply: " + cluster.error().message));
      }
      auto list =
          instance_groups_with_counts(*cluster, counts->names, counts->counts, counts->spares);
      if (!list) return s->report(list.error());
      body[f::kInstanceGroups] = std::move(*list);
    } else if (!body.contains(f::kInstanceGroups) && !body.contains(f::kNodeRecovery) &&
               !body.contains(f::kTieredStorageConfig)) {
      return s->report(
          usage("missing --instance-groups, or --instance-group-name with --instance-count, or "
                "--node-recovery, or --tiered-storage-config (or \"InstanceGroups\", "
                "\"NodeRecovery\" or \"TieredStorageConfig\" in --cli-input-json); see "
                "'endure update-cluster --help'"));
    }
    return s->run(api::kUpdateCluster, body, {print_cluster_arn}, wait.get());
  });
}

void add_update_cluster_software(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand(
      "update-cluster-software",
      "Give nodes fresh software (reimaged, OnCreate run again) in rolling batches; a node "
      "running a job waits for its jobs to end");
  auto request = std::make_shared<RequestBuilder>(verb);
  auto wait = std::make_shared<WaitOptions>();
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  request->add(Kind::kNameList, "--instance-groups", f::kInstanceGroups,
               "the instance groups to update, comma-separated (default every group)");
  request->add(Kind::kJsonObject, "--deployment-config", f::kDeploymentConfig,
               "{\"RollingUpdatePolicy\":{\"MaximumBatchSize\":{\"Type\":\"INSTANCE_COUNT\"|"
               "\"CAPACITY_PERCENTAGE\",\"Value\":N}},\"WaitIntervalInSeconds\":S} (inline or "
               "file://PATH; default one node at a time)");
  add_wait_options(verb, *wait, "the cluster is InService again");
  on_run(verb, selected, [s, request, wait] {
    return s->run(api::kUpdateClusterSoftware, request->build(), {print_cluster_arn}, wait.get());
  });
}

void add_delete_cluster(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand("delete-cluster", "Delete a cluster and all its nodes");
  auto request = std::make_shared<RequestBuilder>(verb);
  auto wait = std::make_shared<WaitOptions>();
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  add_wait_options(verb, *wait, "the cluster is gone");
  on_run(verb, selected, [s, request, wait] {
    return s->run(api::kDeleteCluster, request->build(), {print_cluster_arn}, wait.get(),
                  WaitUntil::kGone);
  });
}

void add_list_cluster_events(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb =
      app.add_subcommand("list-cluster-events", "List a cluster's events, oldest first");
  auto request = std::make_shared<RequestBuilder>(verb);
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  request->add(Kind::kText, "--node-name", f::kNodeName, "only events of this node");
  request->add(Kind::kInteger, "--max-results", f::kMaxResults, "at most this many events");
  on_run(verb, selected, [s, request] {
    return s->run(api::kListClusterEvents, request->build(), {print_events});
  });
}

void add_describe_cluster_event(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand("describe-cluster-event", "Show one event of a cluster");
  auto request = std::make_shared<RequestBuilder>(verb);
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  request->add(Kind::kInteger, "--event-id", f::kEventId, "the event's EventId", true);
  on_run(verb, selected, [s, request] {
    // The table of one event is the events table of a list of one.
    auto one = [](const json& reply, std::ostream& out) {
      print_events({{f::kEvents, json::array({reply.value(f::kEvent, json::object())})}}, out);
    };
    return s->run(api::kDescribeClusterEvent, request->build(), {one});
  });
}

void add_get_cluster_node_log(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb =
      app.add_subcommand("get-cluster-node-log",
                         "Print a node's lifecycle-script output (as JSON with --output json)");
  auto request = std::make_shared<RequestBuilder>(verb);
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  request->add(Kind::kText, "--node-id", f::kNodeId, "instance id or node name (e.g. worker-3)",
               true);
  on_run(verb, selected, [s, request] {
    return s->run(api::kGetClusterNodeLog, request->build(),
                  {print_log, /*table_by_default=*/true});
  });
}

void add_exec(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand(
      "exec", "Run a command inside a node (default: a login shell): exec ... -- CMD ARGS...");
  auto request = std::make_shared<RequestBuilder>(verb);
  auto command = std::make_shared<std::vector<std::string>>();
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  request->add(Kind::kText, "--node", f::kNodeId, "node name (e.g. worker-3) or instance id", true);
  verb->add_option("command", *command, "the command and its arguments, after --");
  verb->footer("Needs root: it enters the node's namespaces with nsenter.");

  on_run(verb, selected, [s, request, command] {
    auto built = request->build();
    if (!built) return s->report(built.error());
    if (::geteuid() != 0) {
      return s->report(
          usage("exec must run as root: it enters the node's namespaces with nsenter"));
    }
    auto target = s->call(api::kGetNodeExecTarget, *built);
    if (!target) return s->report(target.error());
    auto where = api::GetNodeExecTargetReply::from_json(*target);
    if (!where) {
      return s->report(make_error(kFailed, "GetNodeExecTarget's reply: " + where.error().message));
    }
    if (where->pid <= 0) {
      return s->report(make_error(kFailed, "GetNodeExecTarget's reply has no valid Pid"));
    }

    std::vector<std::string> cmd =
        command->empty() ? std::vector<std::string>{"/bin/bash", "-l"} : *command;
    std::vector<std::string> argv = api::node_exec_argv(where->pid, where->node_name, cmd);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    std::cout.flush();
    std::cerr.flush();
    ::execvp(args[0], args.data());
    return s->report(
        make_error(kFailed, std::string("cannot run nsenter: ") + std::strerror(errno)));
  });
}

}  // namespace

// batch-reboot-cluster-nodes and batch-replace-cluster-nodes: the same request shape.
void add_batch_nodes(CLI::App& app, SessionPtr s, Selected selected, const char* name,
                     const char* action, const char* help, int max_nodes = api::kMaxBatchNodes) {
  CLI::App* verb = app.add_subcommand(name, help);
  auto request = std::make_shared<RequestBuilder>(verb);
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  auto ids = std::make_shared<std::vector<std::string>>();
  const std::string limit = std::to_string(max_nodes);
  verb->add_option("--node-ids", *ids, "instance ids, at most " + limit + " (required)");
  on_run(verb, selected, [s, request, ids, action, limit, max_nodes] {
    auto built = request->build();
    if (built && !ids->empty()) (*built)[f::kNodeIds] = *ids;
    if (built && !built->contains(f::kNodeIds)) built = usage("--node-ids: is required");
    // Only the limit is checked here; endured words every other rule (exit 1, as before).
    if (built && (*built)[f::kNodeIds].is_array() &&
        (*built)[f::kNodeIds].size() > static_cast<size_t>(max_nodes)) {
      built = usage("--node-ids: at most " + limit + " instance ids at a time");
    }
    return s->run(action, std::move(built), {print_batch});
  });
}

// --nodes-to-add worker=2 --nodes-to-add gpu=1: a NodesToAdd entry for each.
void add_batch_add_nodes(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand(
      "batch-add-cluster-nodes",
      "Add nodes to instance groups; each gets its NodeLogicalId at once. The same "
      "--client-token again within 8 hours adds nothing twice");
  auto request = std::make_shared<RequestBuilder>(verb);
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  request->add(Kind::kText, "--client-token", f::kClientToken,
               "1 to 64 printable characters: the call made again adds nothing twice", false);
  auto adds = std::make_shared<std::vector<std::string>>();
  verb->add_option("--nodes-to-add", *adds, "GROUP=COUNT, 1 to 5 of them (required)");
  on_run(verb, selected, [s, request, adds] {
    auto built = request->build();
    json entries = json::array();
    for (const auto& a : *adds) {
      const auto eq = a.find('=');
      int count = 0;
      if (eq != std::string::npos) {
        // The whole of COUNT: "2x" is not 2.
        auto [end, ec] = std::from_chars(a.data() + eq + 1, a.data() + a.size(), count);
        if (ec != std::errc() || end != a.data() + a.size()) count = 0;
      }
      if (eq == std::string::npos || eq == 0 || count < 1) {
        built = usage("--nodes-to-add: must be GROUP=COUNT with COUNT a positive integer, not " + a);
        break;
      }
      entries.push_back(
          {{f::kInstanceGroupName, a.substr(0, eq)}, {f::kIncrementTargetCountBy, count}});
    }
    if (built && entries.empty()) built = usage("--nodes-to-add: is required");
    if (built) (*built)[f::kNodesToAdd] = entries;
    return s->run(api::kBatchAddClusterNodes, std::move(built), {print_batch_add});
  });
}

void add_start_health_check(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand(
      "start-cluster-health-check",
      "Run deep health checks (CPU, memory, disk, node-to-node network) on worker nodes");
  auto request = std::make_shared<RequestBuilder>(verb);
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  auto nodes = std::make_shared<std::vector<std::string>>();
  verb->add_option("--nodes", *nodes, "node names or instance ids (default: every worker)");
  on_run(verb, selected, [s, request, nodes] {
    auto built = request->build();
    if (built && !nodes->empty()) (*built)[f::kNodeIds] = *nodes;
    return s->run(api::kStartClusterHealthCheck, std::move(built), {print_health_check});
  });
}

void add_debug(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* debug = app.add_subcommand("debug", "Drills: make real faults on real nodes");
  debug->require_subcommand(1);
  CLI::App* verb = debug->add_subcommand(
      "inject-fault", "Make a fault on a node: " + api::join_words(api::kFaultKinds, ", "));
  auto request = std::make_shared<RequestBuilder>(verb);
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  request->add(Kind::kText, "--node", f::kNodeId, "node name (e.g. worker-2) or instance id", true);
  request->add(Kind::kText, "--kind", f::kKind, api::join_words(api::kFaultKinds, " | "), true);
  on_run(verb, selected,
         [s, request] { return s->run(api::kDebugInjectFault, request->build(), {print_fault}); });
}

void add_verbs(CLI::App& app, const GlobalOptions& global, std::function<int()>* selected) {
  auto session = std::make_shared<Session>(global);
  add_create_cluster(app, session, selected);
  add_describe_cluster(app, session, selected);
  add_list_clusters(app, session, selected);
  add_list_cluster_nodes(app, session, selected);
  add_describe_cluster_node(app, session, selected);
  add_update_cluster(app, session, selected);
  add_update_cluster_software(app, session, selected);
  add_delete_cluster(app, session, selected);
  add_list_cluster_events(app, session, selected);
  add_describe_cluster_event(app, session, selected);
  add_get_cluster_node_log(app, session, selected);
  add_exec(app, session, selected);
  add_batch_nodes(app, session, selected, "batch-reboot-cluster-nodes",
                  api::kBatchRebootClusterNodes,
                  "Reboot nodes: same InstanceId, local disk kept, lifecycle script not re-run");
  add_batch_nodes(app, session, selected, "batch-replace-cluster-nodes",
                  api::kBatchReplaceClusterNodes,
                  "Replace nodes: a new instance under the same hostname, empty local disk");
  add_batch_nodes(app, session, selected, "batch-delete-cluster-nodes",
                  api::kBatchDeleteClusterNodes,
                  "Delete nodes for good: their group shrinks by one each; not the Slurm "
                  "controller node",
                  api::kMaxBatchDeleteNodes);
  add_batch_add_nodes(app, session, selected);
  add_start_health_check(app, session, selected);
  add_host_verbs(app, session, selected);
  add_training_verbs(app, session, selected);
  add_access_key_verbs(app, session, selected);
  add_debug(app, session, selected);
  add_ckpt(app, selected);
}

}  // namespace endure::cli
