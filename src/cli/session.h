// What every verb of the CLI shares: the request a verb builds from its flags
// (RequestBuilder), the connection to endured and how replies and errors are printed
// (Session). The verbs themselves are in verbs.cpp (clusters and nodes) and host_verbs.cpp.
#pragma once

#include <CLI/CLI.hpp>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "api/messages.h"
#include "cli/verbs.h"
#include "common/http_client.h"
#include "common/json.h"
#include "common/result.h"

namespace endure::cli {

// Error codes the CLI makes itself (a server's codes pass through as they are).
inline constexpr const char* kUsage = "Usage";                          // bad input: exit 2
inline constexpr const char* kFailed = "Failed";                        // local failure: exit 1
inline constexpr const char* kConnectionFailure = "ConnectionFailure";  // HttpClient's code

Error usage(std::string message);
std::string join(const std::vector<std::string>& parts, const std::string& separator);
// A JSON argument as the cloud CLI takes it: file://PATH, "-" for stdin, or inline JSON.
Result<json> load_json_arg(const std::string& flag, const std::string& arg);

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
  Result<json> build() const;

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

  static Result<json> parse(const Field& f);

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
          const WaitOptions* wait = nullptr, WaitUntil until = WaitUntil::kInService);

  void print(const json& reply, const Output& output) const;

  // Prints error for people and returns the exit status it calls for.
  int report(const Error& error) const;

 private:
  // Endpoint: --endpoint, $ENDURE_ENDPOINT, $ENDURE_HOME/endpoint, then the default port.
  // Token: $ENDURE_TOKEN, then $ENDURE_HOME/token.
  Status connect();

  // Polls DescribeCluster four times a second (a local cluster is up in about one) until the
  // cluster is InService (or, for kGone, is no more), printing a progress line to stderr whenever
  // what it shows changes.
  int wait_for(const std::string& cluster, WaitUntil until, double timeout_s);

  // "Creating: controller 1/1, worker 2/4": the status, then CurrentCount/TargetCount.
  static std::string progress_line(const api::DescribeClusterReply& cluster);

  const GlobalOptions& global_;
  std::optional<HttpClient> client_;
  std::string endpoint_source_;
};

using SessionPtr = std::shared_ptr<Session>;
using Selected = std::function<int()>*;

using Kind = RequestBuilder::Kind;

// Makes run the verb's action when parsing selects it.
void on_run(CLI::App* verb, Selected selected, std::function<int()> run);
// --wait and --wait-timeout.
void add_wait_options(CLI::App* verb, WaitOptions& wait, const std::string& until);

// register-host-pools, list-hosts, return-host (host_verbs.cpp).
void add_host_verbs(CLI::App& app, SessionPtr s, Selected selected);
// list-training-runs, get-training-metrics, list-cluster-jobs (training_verbs.cpp).
void add_training_verbs(CLI::App& app, SessionPtr s, Selected selected);
// create-access-key, list-access-keys, delete-access-key (access_key_verbs.cpp).
void add_access_key_verbs(CLI::App& app, SessionPtr s, Selected selected);

}  // namespace endure::cli
