// What a provider sees of a node from outside, without its agent: the second opinion on a
// node whose heartbeats stopped.
#pragma once

#include <string>

namespace endure::provider {

enum class MachineState {
  kGone,     // no process of the instance is left: it crashed or was powered off
  kStopped,  // every process is stopped: the machine is hung
  kAlive,    // processes exist and run
  kUnknown,  // the probe could not tell in time (a host that does not answer)
};

enum class AgentState {
  kGone,      // the agent process is not there
  kStopped,   // stopped (SIGSTOP, a debugger)
  kRunnable,  // wants a CPU: busy, or starved by the node's load
  kSleeping,  // waits (on I/O, a lock, a timer): alive, but not heartbeating
  kUnknown,
};

struct NodeProbe {
  MachineState machine = MachineState::kUnknown;
  AgentState agent = AgentState::kUnknown;
  std::string detail;  // for people: "12 processes, 0 stopped; agent pid 7 state S"
};

const char* to_string(MachineState s);
const char* to_string(AgentState s);

}  // namespace endure::provider
