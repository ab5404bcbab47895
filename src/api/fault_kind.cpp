#include "api/fault_kind.h"

namespace endure::api {
namespace {

struct NamedKind {
  FaultKind kind;
  const char* name;
};

constexpr NamedKind kNames[] = {
    {FaultKind::kCrash, "crash"},
    {FaultKind::kHang, "hang"},
    {FaultKind::kAgent, "agent"},
    {FaultKind::kSlurmdGone, "slurmd-gone"},
    {FaultKind::kFsxHang, "fsx-hang"},
    {FaultKind::kFsxError, "fsx-error"},
    {FaultKind::kXid, "xid"},
    {FaultKind::kEcc, "ecc"},
    {FaultKind::kMce, "mce"},
    {FaultKind::kFsError, "fs-error"},
    {FaultKind::kDiskFull, "disk-full"},
    {FaultKind::kLocalDisk, "local-disk"},
    {FaultKind::kCpu, "cpu"},
    {FaultKind::kMemory, "memory"},
    {FaultKind::kGpuCount, "gpu-count"},
    {FaultKind::kNvml, "nvml"},
    {FaultKind::kRebootFailed, "reboot-failed"},
    {FaultKind::kDeepHealthCheck, "deep-health-check"},
    {FaultKind::kSoftwareUpdate, "software-update"},
};

}  // namespace

const char* name(FaultKind kind) {
  for (const auto& n : kNames) {
    if (n.kind == kind) return n.name;
  }
  return "?";  // unreachable: every kind is listed
}

std::optional<FaultKind> parse_fault_kind(std::string_view text) {
  for (const auto& n : kNames) {
    if (text == n.name) return n.kind;
  }
  return std::nullopt;
}

const std::vector<FaultKind>& all_fault_kinds() {
  static const std::vector<FaultKind> kinds = [] {
    std::vector<FaultKind> out;
    for (const auto& n : kNames) out.push_back(n.kind);
    return out;
  }();
  return kinds;
}

bool parse_value(std::string_view text, FaultKind& out) {
  auto kind = parse_fault_kind(text);
  if (kind) out = *kind;
  return kind.has_value();
}

std::string value_names(FaultKind) {
  std::string out;
  for (const auto& n : kNames) out += (out.empty() ? "" : ", ") + std::string(n.name);
  return out;
}

}  // namespace endure::api
