#include "common/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace endure {

void crash_point(const char* name) {
  static const char* wanted = std::getenv("ENDURE_CRASH_AT");
  if (!wanted || std::strcmp(wanted, name) != 0) return;
  // One unbuffered line first, so that a test can tell this SIGKILL from any other (the
  // kernel's, a crash before the point). A failed write changes nothing: the kill follows.
  constexpr char kPrefix[] = "endure: crash point ";
  (void)!::write(STDERR_FILENO, kPrefix, sizeof(kPrefix) - 1);
  (void)!::write(STDERR_FILENO, name, std::strlen(name));
  (void)!::write(STDERR_FILENO, "\n", 1);
  ::kill(::getpid(), SIGKILL);
}

}  // namespace endure
