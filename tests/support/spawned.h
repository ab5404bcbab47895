// Programs under test started in the background, their output appended to files, and
// waited for: what the tests that kill a program mid-run and start it again share.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

namespace endure::test {

// Starts args[0] (a path) with args; stdout appends to `out`, stderr to `out`.err. -1 when
// it cannot be started.
inline pid_t spawn(const std::vector<std::string>& args, const std::filesystem::path& out) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, (out.string() + ".err").c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// Waits for the process; its exit status, or 128 + the signal that ended it; -1 when it
// cannot be waited for (spawn's -1, not a child of this process, already reaped), never a
// status it did not end with.
inline int wait_exit(pid_t pid) {
  if (pid <= 0) return -1;  // waitpid would take any child, or any of the group
  int status = 0;
  while (::waitpid(pid, &status, 0) != pid) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace endure::test
