#include "swarm_machines.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>

#include "api/fields.h"
#include "common/log.h"

namespace endure::swarm {

Result<MachineEvent> parse_machine_record(std::string_view line) {
  json record = json::parse(line, nullptr, false);
  if (!record.is_object()) return make_error("BadRecord", "not a JSON object");
  MachineEvent event;
  try {
    std::string kind = record.at(api::field::kEvent).get<std::string>();
    event.instance_id = record.at(api::field::kInstanceId).get<std::string>();
    if (kind == "Gone") {
      event.kind = MachineEvent::Kind::kGone;
      return event;
    }
    if (kind != "Boot")
      return make_error("BadRecord", "Event '" + kind + "' is neither Boot nor Gone");
    event.kind = MachineEvent::Kind::kBoot;
    event.cluster_id = record.value(api::field::kClusterId, "");
    event.node_name = record.value(api::field::kNodeName, "");
    event.boot = record.value("Boot", 1);
    auto config = api::AgentConfig::from_json(record.at("AgentConfig"));
    if (!config) return config.error();
    event.config = std::move(*config);
  } catch (const std::exception& e) {
    return make_error("BadRecord", e.what());
  }
  return event;
}

MachineLog::~MachineLog() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<MachineEvent> MachineLog::read_new() {
  std::vector<MachineEvent> events;
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return events;
  }
  std::array<char, 65536> chunk;
  ssize_t n;
  while ((n = ::read(fd_, chunk.data(), chunk.size())) > 0) {
    pending_.append(chunk.data(), static_cast<std::size_t>(n));
  }
  std::size_t start = 0;
  for (std::size_t end; (end = pending_.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string_view line(pending_.data() + start, end - start);
    if (line.empty()) continue;
    auto event = parse_machine_record(line);
    if (event) {
      events.push_back(std::move(*event));
    } else {
      ++bad_lines_;
      log::warn("swarm: {}: skipped a line: {}", path_.string(), event.error().message);
    }
  }
  pending_.erase(0, start);
  return events;
}

}  // namespace endure::swarm
