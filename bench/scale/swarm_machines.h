// The simulated provider's record of its machines, <sim-dir>/machines.jsonl: one JSON object
// per line, appended (and flushed) as machines start, reboot and go.
//   {"Event":"Boot","ClusterId":..,"InstanceId":..,"NodeName":..,"Boot":n,"AgentConfig":{..}}
//   {"Event":"Gone","InstanceId":..}
// Boot 1 is a new machine; 2, 3, ... the same InstanceId rebooted or reimaged. AgentConfig
// is the agent's config file (api/node_files.h, AgentConfig).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_files.h"
#include "common/result.h"

namespace endure::swarm {

struct MachineEvent {
  enum class Kind { kBoot, kGone };
  Kind kind = Kind::kBoot;
  std::string instance_id;
  // Boot only.
  std::string cluster_id;
  std::string node_name;
  int boot = 0;
  api::AgentConfig config;
};

// One line of machines.jsonl. Fails on a line that is not one of the two records.
Result<MachineEvent> parse_machine_record(std::string_view line);

// Follows machines.jsonl while the provider appends to it.
class MachineLog {
 public:
  explicit MachineLog(std::filesystem::path path) : path_(std::move(path)) {}
  ~MachineLog();
  MachineLog(const MachineLog&) = delete;
  MachineLog& operator=(const MachineLog&) = delete;

  // The records appended since the last call, in order. A last line without its newline
  // waits for the next call (the provider is writing it); a file not there yet reads as
  // empty. A line that does not parse is logged, counted and skipped.
  std::vector<MachineEvent> read_new();

  int64_t bad_lines() const { return bad_lines_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::string pending_;  // read, not yet a whole line
  int64_t bad_lines_ = 0;
};

}  // namespace endure::swarm
