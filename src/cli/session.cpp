#include "cli/session.h"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <thread>

#include "api/wire.h"
#include "cli/home.h"
#include "cli/table.h"
#include "common/fs.h"

namespace endure::cli {
namespace {

namespace f = api::field;

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

}  // namespace

Error usage(std::string message) { return make_error(kUsage, std::move(message)); }

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

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
  } catch (const json::exception& e) {  // parse_error, and out_of_range for 1E400
    if (source == "the value" && std::filesystem::exists(arg)) {
      return usage(flag + ": '" + arg + "' is not JSON; to read that file write file://" + arg);
    }
    std::string why = e.what();
    if (auto bracket = why.find("] "); bracket != std::string::npos) why = why.substr(bracket + 2);
    return usage(flag + ": " + source + " is not valid JSON: " + why);
  }
}

Result<json> RequestBuilder::build() const {
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

Result<json> RequestBuilder::parse(const Field& f) {
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

int Session::run(const std::string& action, const Result<json>& request, const Output& output,
                 const WaitOptions* wait, WaitUntil until) {
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

void Session::print(const json& reply, const Output& output) const {
  bool table = global_.output.empty() ? output.table_by_default : global_.output == "table";
  if (table && output.table) {
    output.table(reply, std::cout);
  } else {
    std::cout << dump(reply) << "\n";
  }
}

int Session::report(const Error& error) const {
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

Status Session::connect() {
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

int Session::wait_for(const std::string& cluster, WaitUntil until, double timeout_s) {
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
        return report(make_error(kFailed, "DescribeCluster's reply: " + described.error().message));
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
      return report(make_error(kFailed, std::string("timed out after ") + limit +
                                            " waiting for cluster " + cluster + " to be " +
                                            (until == WaitUntil::kGone ? "deleted" : "InService") +
                                            " (status " + status + "); see --wait-timeout"));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(0.25, left)));
  }
}

std::string Session::progress_line(const api::DescribeClusterReply& cluster) {
  std::vector<std::string> groups;
  for (const auto& g : cluster.instance_groups) {
    groups.push_back(g.instance_group_name + " " + std::to_string(g.current_count) + "/" +
                     std::to_string(g.target_count));
  }
  const std::string& line = cluster.cluster_status;
  return groups.empty() ? line : line + ": " + join(groups, ", ");
}

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

}  // namespace endure::cli
