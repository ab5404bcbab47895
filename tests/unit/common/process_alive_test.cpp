// process::alive on a node's first process that is exiting: the provider's terminate waits
// on it, and an exiting init must not hold that wait for as long as a zombie of its
// namespace is left unreaped by a parent outside it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "common/process.h"

namespace endure {
namespace {

using namespace std::chrono_literals;

bool becomes(bool want, int pid, std::chrono::milliseconds within) {
  auto deadline = std::chrono::steady_clock::now() + within;
  while (process::alive(pid) != want) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

TEST(ProcessAlive, AnInitWaitingInExitForAnUnreapedZombieIsNotAlive) {
  if (::geteuid() != 0) GTEST_SKIP() << "a pid namespace needs root";
  // The init: the first process of a new pid namespace, waiting until killed.
  pid_t init = static_cast<pid_t>(::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, nullptr));
  ASSERT_GE(init, 0) << "clone: " << std::strerror(errno);
  if (init == 0) {
    ::pause();
    ::_exit(0);
  }
  EXPECT_TRUE(process::alive(init));

  // A helper outside the namespace enters it, starts a child there that exits at once, and
  // leaves it unreaped until told (as when a command's nsenter is killed at a deadline).
  int release[2];
  ASSERT_EQ(::pipe(release), 0);
  int ns = ::open(("/proc/" + std::to_string(init) + "/ns/pid").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(ns, 0);
  pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    ::close(release[1]);
    if (::setns(ns, CLONE_NEWPID) != 0) ::_exit(1);
    pid_t inside = ::fork();
    if (inside == 0) ::_exit(0);
    char byte;
    (void)!::read(release[0], &byte, 1);
    ::waitpid(inside, nullptr, 0);
    ::_exit(0);
  }
  ::close(ns);
  ::close(release[0]);

  ::kill(init, SIGKILL);
  // The init cannot finish exiting while the zombie waits, yet it is gone for our purposes.
  EXPECT_TRUE(becomes(false, init, 2s));
  EXPECT_EQ(::kill(init, 0), 0) << "the init finished exiting: the case is not exercised";

  ::close(release[1]);  // the helper reaps the zombie; the init then ends
  ASSERT_EQ(::waitpid(helper, nullptr, 0), helper);
  ASSERT_EQ(::waitpid(init, nullptr, 0), init);
}

}  // namespace
}  // namespace endure
