// The one process runner: runs a program with a deadline and captures its output.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace endure::process {

struct Output {
  int exit_code = -1;  // exit status, or 128+signal when killed by a signal
  bool timed_out = false;
  std::string out;
  std::string err;
};

struct Options {
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  std::string stdin_data;
  // When set, the child gets exactly this environment instead of ours.
  bool replace_env = false;
  std::map<std::string, std::string> env;
  std::string cwd;
};

// Runs argv[0] (looked up in PATH) and waits for it, up to the timeout; on timeout the
// child's whole process group is killed. Never throws. REQUIRES: SIGPIPE is ignored in
// this process when stdin_data is given (a child that exits unread would raise it).
Output run(const std::vector<std::string>& argv, const Options& options = {});

// True when a process with this pid exists, is not a zombie and is not exiting.
bool alive(int pid);

}  // namespace endure::process
