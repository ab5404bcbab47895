#include "common/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace endure::process {
namespace {

void close_quietly(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

bool alive(int pid) {
  if (pid <= 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content;
  if (!std::getline(stat, content)) return false;
  // Field 3 (state) follows the last ')' of the command name.
  auto close_paren = content.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= content.size()) return false;
  char state = content[close_paren + 2];
  if (state == 'Z' || state == 'X') return false;
  // Fields 4-8 (ppid, pgrp, session, tty, tpgid), then 9: the kernel's task flags.
  std::istringstream rest(content.substr(close_paren + 3));
  long long skipped = 0;
  unsigned long flags = 0;
  for (int i = 0; i < 5; ++i) rest >> skipped;
  constexpr unsigned long kExiting = 0x4;  // PF_EXITING
  // An exiting pid namespace's first process waits in exit until every process of the
  // namespace is reaped, which a parent outside it may never do: it runs nothing more.
  return !(rest >> flags) || (flags & kExiting) == 0;
}

Output run(const std::vector<std::string>& argv, const Options& options) {
  Output result;
  if (argv.empty()) {
    result.err = "process::run: empty argv";
    return result;
  }
  // Everything the child needs is built before fork: after fork in a threaded program
  // only async-signal-safe calls are allowed.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  if (options.replace_env) {
    for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  } else {
    for (char** e = environ; *e; ++e) {
      std::string entry(*e);
      auto key = entry.substr(0, entry.find('='));
      if (!options.env.count(key)) env_strings.push_back(entry);
    }
    for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC)) {
    result.err = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  pid_t pid = fork();
  if (pid < 0) {
    result.err = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(126);
    signal(SIGPIPE, SIG_DFL);
    execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  int in_fd = in_pipe[1], out_fd = out_pipe[0], err_fd = err_pipe[0];
  size_t in_written = 0;
  if (options.stdin_data.empty())
    close_quietly(in_fd);
  else
    fcntl(in_fd, F_SETFL, O_NONBLOCK);

  auto deadline = std::chrono::steady_clock::now() + options.timeout;
  int status = 0;
  bool reaped = false;
  // A daemon started by the child may keep our pipes open for ever: once the child itself
  // has exited, take what is already buffered and stop.
  bool draining = false;
  while (out_fd >= 0 || err_fd >= 0) {
    if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      draining = true;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    pollfd fds[3];
    int n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    int rc = poll(fds, n, draining ? 0 : static_cast<int>(std::min<long>(left.count(), 50)));
    if (rc < 0 && errno != EINTR) break;
    if (draining && rc == 0) break;
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == in_fd) {
        ssize_t w = ::write(in_fd, options.stdin_data.data() + in_written,
                            options.stdin_data.size() - in_written);
        if (w > 0) in_written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) close_quietly(in_fd);
        if (in_written >= options.stdin_data.size()) close_quietly(in_fd);
        continue;
      }
      char buf[8192];
      ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
      bool is_out = fds[i].fd == out_fd;
      if (r > 0) {
        (is_out ? result.out : result.err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        close_quietly(is_out ? out_fd : err_fd);
      }
    }
  }
  close_quietly(in_fd);
  close_quietly(out_fd);
  close_quietly(err_fd);
  // The child may have closed its output and still run: the deadline holds for it too.
  while (!reaped) {
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  return result;
}

}  // namespace endure::process
