#include "spank/auto_resume_option.h"

#include <cstring>

namespace endure::spank {

int parse_auto_resume(const char* optarg, std::string* error) {
  if (optarg == nullptr || *optarg == '\0' || std::strcmp(optarg, "1") == 0) return 1;
  if (std::strcmp(optarg, "0") == 0) return 0;
  *error = std::string("--auto-resume=") + optarg + ": must be 0 or 1";
  return -1;
}

bool parse_plugin_args(const std::vector<std::string>& args, PluginArgs* out, std::string* error) {
  for (const auto& a : args) {
    const std::string key = "supervisor=";
    if (a.rfind(key, 0) == 0 && a.size() > key.size() && a[key.size()] == '/') {
      out->supervisor = a.substr(key.size());
      continue;
    }
    *error = "plugstack.conf argument \"" + a +
             "\": not understood (the one argument is supervisor=/absolute/path)";
    return false;
  }
  return true;
}

std::vector<std::string> supervisor_argv(const std::string& supervisor,
                                         const std::string& srun_exe,
                                         const std::vector<std::string>& srun_argv) {
  std::vector<std::string> argv = {supervisor, "--srun", srun_exe, "--"};
  argv.insert(argv.end(), srun_argv.begin(), srun_argv.end());
  return argv;
}

std::vector<std::string> split_cmdline(const std::string& raw) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < raw.size()) {
    size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    out.push_back(raw.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace endure::spank
