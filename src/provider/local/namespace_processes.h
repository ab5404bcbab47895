// A local instance's processes, seen from the host through /proc.
#pragma once

#include <vector>

namespace endure::provider {

// Every live process whose pid namespace is that of pid.
std::vector<int> processes_in_namespace_of(int pid);

// The state letter of /proc/<pid>/stat ('R', 'S', 'D', 'T', 't', 'Z', ...); 0 when gone.
char process_state(int pid);

// The pid of host process pid inside its innermost pid namespace (NSpid's last); 0 when
// unknown.
int pid_in_own_namespace(int pid);

}  // namespace endure::provider
