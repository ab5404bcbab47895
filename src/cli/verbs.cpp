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

#include "api/messages.h"
#include "api/wire.h"
#include "cli/table.h"
#include "common/fs.h"
#include "common/http_client.h"
#include "common/json.h"
#include "common/result.h"
#include "provider/local/local_provider.h"

namespace endure::cli {
namespace {

namespace f = api::field;

// Error codes the CLI makes itself (a server's codes pass through as they are).
constexpr const char* kUsage = "Usage";                          // bad input: exit 2
constexpr const char* kFailed = "Failed";                        // local failure: exit 1
constexpr const char* kConnectionFailure = "ConnectionFailure";  // HttpClient's code

Error usage(std::string message) { return make_error(kUsage, std::move(message)); }

std::string dump(const json& value) {
  return value.dump(4, ' ', false, json::error_handler_t::replace);
}

std::string trim(const std::string& text) {
  const char* space = " \t\r\n";
  size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::filesystem::path endure_home() {
  if (std::string home = env("ENDURE_HOME"); !home.empty()) return home;
  std::string home = env("HOME");
  return std::filesystem::path(home.empty() ? "/root" : home) / ".endure";
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

// A JSON argument as the cloud CLI takes it: file://PATH, "-" for stdin, or inline JSON.
Result<json> load_json_arg(const std::string& flag, const std::string& arg) {
  std::string text;
  std::string source = "the value";
  if (arg.rfind("file://", 0) == 0) {
    std::string path = arg.substr(7);
    if (std::filesystem::is_directory(path)) return usage(flag + ": " + path + " is a folder");
    auto data = fs::read_file(path);
    if (!data) return usage(flag + ": " + data.error().message);
    text = std::move(*data);
    source = path;
  } else if (arg == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    source = "stdin";
  } else {
    text = arg;
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    if (source == "the value" && std::filesystem::exists(arg)) {
      return usage(flag + ": '" + arg + "' is not JSON; to read that file write file://" + arg);
    }
    std::string why = e.what();
    if (auto bracket = why.find("] "); bracket != std::string::npos) why = why.substr(bracket + 2);
    return usage(flag + ": " + source + " is not valid JSON: " + why);
  }
}

// One verb's request body: the --cli-input-json object, then every flag that was given
// written over its field, so explicit flags win.
class RequestBuilder {
 public:
  enum class Kind { kText, kInteger, kJsonArray, kJsonObject, kNameList };

  explicit RequestBuilder(CLI::App* verb) : verb_(verb) {
    input_option_ = verb->add_option(
        "--cli-input-json", input_,
        "the request as JSON: file://PATH, - for stdin, or inline; flags override its fields");
  }

  // Adds flag, which sets the request's field. A required field must come from the flag
  // or from --cli-input-json.
  CLI::Option* add(Kind kind, const std::string& flag, const std::string& field,
                   const std::string& help, bool required = false) {
    Field& f = fields_.emplace_back(Field{kind, flag, field, required, "", nullptr});
    f.option = verb_->add_option(flag, f.value, help + (required ? " (required)" : ""));
    return f.option;
  }

  // The request, or a usage error naming the flag or field at fault.
  Result<json> build() const {
    json request = json::object();
    if (input_option_->count() > 0) {
      auto loaded = load_json_arg("--cli-input-json", input_);
      if (!loaded) return loaded.error();
      if (!loaded->is_object()) {
        return usage(std::string("--cli-input-json: must be a JSON object, not ") +
                     loaded->type_name());
      }
      request = std::move(*loaded);
    }
    for (const Field& f : fields_) {
      if (f.option->count() == 0) continue;
      auto value = parse(f);
      if (!value) return value.error();
      request[f.key] = std::move(*value);
    }
    for (const Field& f : fields_) {
      if (f.required && (!request.contains(f.key) || request[f.key].is_null())) {
        return usage("missing " + f.flag + " (or \"" + f.key +
                     "\" in --cli-input-json); see 'endure " + verb_->get_name() + " --help'");
      }
    }
    return request;
  }

  // The folder that relative paths in the request are relative to: that of the
  // --cli-input-json file, else the working directory.
  std::filesystem::path base_folder() const {
    if (input_option_->count() > 0 && input_.rfind("file://", 0) == 0) {
      return std::filesystem::absolute(input_.substr(7)).parent_path();
    }
    return std::filesystem::current_path();
  }

 private:
  struct Field {
    Kind kind;
    std::string flag;
    std::string key;
    bool required;
    std::string value;  // CLI11 writes here
    CLI::Option* option;
  };

  static Result<json> parse(const Field& f) {
    switch (f.kind) {
      case Kind::kText:
        return json(f.value);
      case Kind::kInteger: {
        long long n = 0;
        const char* end = f.value.data() + f.value.size();
        auto [ptr, ec] = std::from_chars(f.value.data(), end, n);
        if (ec != std::errc() || ptr != end) {
          return usage(f.flag + ": '" + f.value + "' is not an integer");
        }
        return json(n);
      }
      case Kind::kJsonArray: {
        auto value = load_json_arg(f.flag, f.value);
        if (value && !value->is_array()) {
          return usage(f.flag + ": must be a JSON array, not " + std::string(value->type_name()));
        }
        return value;
      }
      case Kind::kJsonObject: {
        auto value = load_json_arg(f.flag, f.value);
        if (value && !value->is_object()) {
          return usage(f.flag + ": must be a JSON object, not " + std::string(value->type_name()));
        }
        return value;
      }
      case Kind::kNameList: {
        // "worker,gpu" or a JSON array of names.
        if (!f.value.empty() && f.value[0] == '[') return load_json_arg(f.flag, f.value);
        json names = json::array();
        size_t start = 0;
        while (start <= f.value.size()) {
          size_t comma = f.value.find(',', start);
          std::string name = f.value.substr(start, comma - start);
          if (name.empty()) return usage(f.flag + ": '" + f.value + "' has an empty name");
          names.push_back(name);
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
        return names;
      }
    }
    return usage(f.flag + ": unknown kind");
  }

  CLI::App* verb_;
  std::string input_;
  CLI::Option* input_option_;
  std::deque<Field> fields_;  // a deque, so the strings CLI11 writes to never move
};

// How a verb prints its reply for people; JSON output is the same for every verb.
struct Output {
  std::function<void(const json& reply, std::ostream& out)> table;
  bool table_by_default = false;  // get-cluster-node-log prints its text unless --output json
};

struct WaitOptions {
  bool enabled = false;
  double timeout_s = 900;
};

enum class WaitUntil { kInService, kGone };

// What every verb shares: the global options and the connection to endured.
class Session {
 public:
  explicit Session(const GlobalOptions& global) : global_(global) {}

  // Sends one action. The first call finds the endpoint and the token.
  Result<json> call(const std::string& action, const json& request) {
    if (Status s = connect(); !s) return s.error();
    return client_->post(std::string(api::kPathPrefix) + action, request);
  }

  // The one way a verb talks to endured: send the request, wait if asked, print the reply.
  int run(const std::string& action, const Result<json>& request, const Output& output,
          const WaitOptions* wait = nullptr, WaitUntil until = WaitUntil::kInService) {
    if (!request) return report(request.error());
    auto reply = call(action, *request);
    if (!reply) return report(reply.error());
    if (wait && wait->enabled) {
      std::string cluster = cell_text(find_path(*request, f::kClusterName));
      if (int rc = wait_for(cluster, until, wait->timeout_s); rc != kExitOk) return rc;
    }
    print(*reply, output);
    return kExitOk;
  }

  void print(const json& reply, const Output& output) const {
    bool table = global_.output.empty() ? output.table_by_default : global_.output == "table";
    if (table && output.table) {
      output.table(reply, std::cout);
    } else {
      std::cout << dump(reply) << "\n";
    }
  }

  // Prints error for people and returns the exit status it calls for.
  int report(const Error& error) const {
    if (error.code == kUsage) {
      std::cerr << "endure: error: " << error.message << "\n";
      return kExitUsage;
    }
    if (error.code == kFailed) {
      std::cerr << "endure: " << error.message << "\n";
    } else if (error.code == kConnectionFailure) {
      std::cerr << "endure: " << error.message << " (endpoint from " << endpoint_source_
                << "; is endured running?)\n";
    } else {
      std::cerr << "An error occurred (" << error.code << ")"
                << (error.message.empty() ? "" : ": " + error.message) << "\n";
    }
    return kExitFailed;
  }

 private:
  // Endpoint: --endpoint, $ENDURE_ENDPOINT, $ENDURE_HOME/endpoint, then the default port.
  // Token: $ENDURE_TOKEN, then $ENDURE_HOME/token.
  Status connect() {
    if (client_) return {};
    std::string url = "http://127.0.0.1:" + std::to_string(api::kDefaultPort);
    endpoint_source_ = "the built-in default";
    std::filesystem::path endpoint_file = endure_home() / "endpoint";
    if (!global_.endpoint.empty()) {
      url = global_.endpoint;
      endpoint_source_ = "--endpoint";
    } else if (std::string from_env = env("ENDURE_ENDPOINT"); !from_env.empty()) {
      url = from_env;
      endpoint_source_ = "ENDURE_ENDPOINT";
    } else if (auto data = fs::read_file(endpoint_file); data) {
      url = trim(*data);
      endpoint_source_ = endpoint_file.string();
    } else if (data.error().code != "NotFound") {
      return usage(data.error().message);
    }
    auto endpoint = parse_endpoint(trim(url));
    if (!endpoint) return usage(endpoint_source_ + ": " + endpoint.error().message);

    std::string token = trim(env("ENDURE_TOKEN"));
    std::filesystem::path token_file = endure_home() / "token";
    if (token.empty()) {
      if (auto data = fs::read_file(token_file); data) token = trim(*data);
    }
    if (token.empty()) {
      std::cerr << "endure: no token: set ENDURE_TOKEN or run endured once to create "
                << token_file.string() << "\n";
    }
    client_.emplace(*endpoint, token);
    return {};
  }

  // Polls DescribeCluster four times a second (a local cluster is up in about one) until the
  // cluster is InService (or, for kGone, is no more), printing a progress line to stderr whenever
  // what it shows changes.
  int wait_for(const std::string& cluster, WaitUntil until, double timeout_s) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const json request = api::DescribeClusterRequest{cluster}.to_json();
    std::string last_line;
    std::string status = "unknown";
    auto progress = [&](const std::string& line) {
      if (line == last_line) return;
      last_line = line;
      double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      char stamp[32];
      std::snprintf(stamp, sizeof stamp, "[%5.1fs] ", elapsed);
      std::cerr << stamp << line << std::endl;
    };
    for (;;) {
      auto reply = call(api::kDescribeCluster, request);
      if (reply) {
        auto described = api::DescribeClusterReply::from_json(*reply);
        if (!described) {
          return report(
              make_error(kFailed, "DescribeCluster's reply: " + described.error().message));
        }
        status = described->cluster_status;
        progress(progress_line(*described));
        if (status == "Failed") {
          std::string why = described->failure_message.value_or("-");
          std::cerr << "Cluster " << cluster << " failed: " << why << "\n";
          return kExitFailed;
        }
        if (until == WaitUntil::kInService && status == "InService") return kExitOk;
      } else if (until == WaitUntil::kGone && reply.error().code == api::kResourceNotFound) {
        progress("Deleted");
        return kExitOk;
      } else if (reply.error().code == kConnectionFailure) {
        // endured may be restarting; keep asking until the deadline.
        progress("endured unreachable, retrying: " + reply.error().message);
      } else {
        return report(reply.error());
      }
      double left = timeout_s - std::chrono::duration<double>(Clock::now() - start).count();
      if (left <= 0) {
        char limit[32];
        std::snprintf(limit, sizeof limit, "%gs", timeout_s);
        return report(make_error(
            kFailed, std::string("timed out after ") + limit + " waiting for cluster " + cluster +
                         " to be " + (until == WaitUntil::kGone ? "deleted" : "InService") +
                         " (status " + status + "); see --wait-timeout"));
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(0.25, left)));
    }
  }

  // "Creating: controller 1/1, worker 2/4": the status, then CurrentCount/TargetCount.
  static std::string progress_line(const api::DescribeClusterReply& cluster) {
    std::vector<std::string> groups;
    for (const auto& g : cluster.instance_groups) {
      groups.push_back(g.instance_group_name + " " + std::to_string(g.current_count) + "/" +
                       std::to_string(g.target_count));
    }
    const std::string& line = cluster.cluster_status;
    return groups.empty() ? line : line + ": " + join(groups, ", ");
  }

  const GlobalOptions& global_;
  std::optional<HttpClient> client_;
  std::string endpoint_source_;
};

using SessionPtr = std::shared_ptr<Session>;
using Selected = std::function<int()>*;

// Verb registration.

using Kind = RequestBuilder::Kind;

void on_run(CLI::App* verb, Selected selected, std::function<int()> run) {
  verb->callback([selected, run = std::move(run)] { *selected = run; });
}

void add_wait_options(CLI::App* verb, WaitOptions& wait, const std::string& until) {
  CLI::Option* flag = verb->add_flag("--wait", wait.enabled,
                                     "then wait until " + until + ", printing progress to stderr");
  verb->add_option("--wait-timeout", wait.timeout_s, "seconds --wait waits at most (default 900)")
      ->check(CLI::Validator(
          [](std::string& text) {
            double seconds = 0;
            auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
            bool ok = ec == std::errc() && ptr == text.data() + text.size() && seconds > 0;
            return ok ? std::string() : "'" + text + "' is not a positive number of seconds";
          },
          "SECONDS"))
      ->needs(flag);
}

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

void add_create_cluster(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* verb = app.add_subcommand(
      "create-cluster", "Create a cluster from a spec: --cli-input-json file://spec.json");
  auto request = std::make_shared<RequestBuilder>(verb);
  auto wait = std::make_shared<WaitOptions>();
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name of the new cluster", true);
  request->add(Kind::kJsonArray, "--instance-groups", f::kInstanceGroups,
               "the instance groups as a JSON array (inline or file://PATH)", true);
  request->add(Kind::kText, "--node-recovery", f::kNodeRecovery, "Automatic or None");
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
// the named groups' counts replaced.
Result<json> instance_groups_with_counts(const api::DescribeClusterReply& cluster,
                                         const std::vector<std::string>& names,
                                         const std::vector<long long>& counts) {
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
    json group = spec.to_json();
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == g.instance_group_name) {
        // As given, not narrowed to int: endured's range check words the error.
        group[f::kInstanceCount] = counts[i];
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
                                      "G --instance-count N, repeatable); or NodeRecovery alone");
  auto request = std::make_shared<RequestBuilder>(verb);
  auto wait = std::make_shared<WaitOptions>();
  struct Counts {
    std::vector<std::string> names;
    std::vector<long long> counts;
  };
  auto counts = std::make_shared<Counts>();
  request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster", true);
  CLI::Option* groups =
      request->add(Kind::kJsonArray, "--instance-groups", f::kInstanceGroups,
                   "every instance group as a JSON array (inline or file://PATH)");
  request->add(Kind::kText, "--node-recovery", f::kNodeRecovery, "Automatic or None");
  verb->add_option("--instance-group-name", counts->names,
                   "a group whose count --instance-count sets; the others keep theirs")
      ->allow_extra_args(false)
      ->excludes(groups);
  verb->add_option("--instance-count", counts->counts, "the new count of that group")
      ->allow_extra_args(false)
      ->excludes(groups);
  add_wait_options(verb, *wait, "the cluster is InService again");

  on_run(verb, selected, [s, request, wait, counts] {
    auto built = request->build();
    if (!built) return s->report(built.error());
    json& body = *built;
    if (!counts->names.empty() || !counts->counts.empty()) {
      if (counts->names.size() != counts->counts.size()) {
        return s->report(usage("--instance-group-name and --instance-count go in pairs (got " +
                               std::to_string(counts->names.size()) + " and " +
                               std::to_string(counts->counts.size()) + ")"));
      }
      // The name as given (any JSON): endured's answer to a bad one is the error shown.
      auto reply = s->call(api::kDescribeCluster, {{f::kClusterName, body[f::kClusterName]}});
      if (!reply) return s->report(reply.error());
      auto cluster = api::DescribeClusterReply::from_json(*reply);
      if (!cluster) {
        return s->report(
            make_error(kFailed, "DescribeCluster's reply: " + cluster.error().message));
      }
      auto list = instance_groups_with_counts(*cluster, counts->names, counts->counts);
      if (!list) return s->report(list.error());
      body[f::kInstanceGroups] = std::move(*list);
    } else if (!body.contains(f::kInstanceGroups) && !body.contains(f::kNodeRecovery)) {
      return s->report(
          usage("missing --instance-groups, or --instance-group-name with --instance-count, or "
                "--node-recovery (or \"InstanceGroups\" or \"NodeRecovery\" in "
                "--cli-input-json); see 'endure update-cluster --help'"));
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
    std::vector<std::string> argv = provider::node_exec_argv(where->pid, where->node_name, cmd);
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
  add_start_health_check(app, session, selected);
  add_debug(app, session, selected);
  add_ckpt(app, selected);
}

}  // namespace endure::cli
