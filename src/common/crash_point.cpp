#include "common/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace endure {

void crash_point(const char* name) {
  static const char* wanted = std::getenv("ENDURE_CRASH_AT");
  if (wanted && std::strcmp(wanted, name) == 0) ::kill(::getpid(), SIGKILL);
}

}  // namespace endure
