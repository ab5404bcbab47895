// Crash points: a test sets ENDURE_CRASH_AT=<name> and the process kills itself with
// SIGKILL the first time it reaches that point, to prove a crash there loses nothing. It
// writes "endure: crash point <name>" to stderr first, so the test can tell it reached the
// point. Without the variable a crash point costs one comparison.
#pragma once

namespace endure {

void crash_point(const char* name);

}  // namespace endure
