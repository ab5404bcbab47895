#include "provider/node_probe.h"

namespace endure::provider {

const char* to_string(MachineState s) {
  switch (s) {
    case MachineState::kGone:
      return "gone";
    case MachineState::kStopped:
      return "stopped";
    case MachineState::kAlive:
      return "alive";
    case MachineState::kUnknown:
      break;
  }
  return "unknown";
}

const char* to_string(AgentState s) {
  switch (s) {
    case AgentState::kGone:
      return "gone";
    case AgentState::kStopped:
      return "stopped";
    case AgentState::kRunnable:
      return "runnable";
    case AgentState::kSleeping:
      return "sleeping";
    case AgentState::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace endure::provider
