#include "agent/health/health_check.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>

#include "agent/health/disk.h"
#include "agent/health/fsx.h"
#include "agent/health/kernel_log.h"
#include "agent/health/nvml.h"
#include "agent/health/resources.h"
#include "agent/health/slurmd.h"
#include "common/log.h"

namespace endure::agent::health {

std::string errno_text(const char* what, const std::string& path) {
  return fmt::format("{} {}: {}", what, path, std::strerror(errno));
}

std::vector<std::unique_ptr<HealthCheck>> basic_checks(const NodeExpectations& expect) {
  std::vector<std::unique_ptr<HealthCheck>> checks;
  checks.push_back(std::make_unique<CpuCheck>(expect));
  checks.push_back(std::make_unique<MemoryCheck>(expect));
  checks.push_back(std::make_unique<BasicLocalDiskCheck>(expect));
  // At creation /fsx must also have room; later a full /fsx is every node's problem, not
  // this node's, so the continuous probe leaves space alone.
  checks.push_back(std::make_unique<FsxCheck>(expect, /*check_space=*/true));
  if (expect.gpus > 0) checks.push_back(std::make_unique<NvmlCheck>(expect));
  return checks;
}

std::vector<std::unique_ptr<HealthCheck>> continuous_checks(const NodeExpectations& expect) {
  std::vector<std::unique_ptr<HealthCheck>> checks;
  checks.push_back(std::make_unique<DiskCheck>(expect));
  checks.push_back(std::make_unique<FsxCheck>(expect));
  if (expect.runs_slurmd) checks.push_back(std::make_unique<SlurmdCheck>(expect));
  if (expect.gpus > 0) checks.push_back(std::make_unique<NvmlCheck>(expect, /*continuous=*/true));
  return checks;
}

std::vector<Finding> run_all(const std::vector<std::unique_ptr<HealthCheck>>& checks) {
  std::vector<Finding> all;
  for (const auto& check : checks) {
    // run() promises not to throw; a check that breaks it must not take the others down.
    try {
      for (auto& f : check->run()) all.push_back(std::move(f));
    } catch (const std::exception& e) {
      log::warn("health check {} threw: {}", check->name(), e.what());
    } catch (...) {
      log::warn("health check {} threw", check->name());
    }
  }
  return all;
}

json gather_gauges(const std::vector<std::unique_ptr<HealthCheck>>& checks) {
  json out = json::object();
  resource_gauges(out);
  for (const auto& check : checks) check->gauges(out);
  return out;
}

BoundedProbe::BoundedProbe() : state_(std::make_shared<State>()) {}

BoundedProbe::Result BoundedProbe::run(Probe probe, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(state_->mu);
  auto since = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - state_->started);
  };
  if (state_->running) return {Outcome::kStillStuck, {}, since()};

  state_->running = true;
  state_->findings.clear();
  state_->started = Clock::now();
  try {
    // The thread holds its own reference to the state: it may return after this object
    // (and the check owning it) is gone.
    std::thread([state = state_, probe = std::move(probe)] {
      std::vector<Finding> found;
      try {
        found = probe();
      } catch (const std::exception& e) {
        log::warn("health probe threw: {}", e.what());
      } catch (...) {
        log::warn("health probe threw");
      }
      std::lock_guard guard(state->mu);
      state->findings = std::move(found);
      state->running = false;
      state->cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    // No thread to spare: the probe did not run, which says nothing about what it probes.
    state_->running = false;
    log::warn("cannot start a health probe thread: {}", e.what());
    return {};
  }

  if (!state_->cv.wait_for(lock, timeout, [&] { return !state_->running; })) {
    return {Outcome::kTimedOut, {}, since()};
  }
  return {Outcome::kDone, std::move(state_->findings), {}};
}

std::vector<Finding> BoundedProbe::run_or_report_hang(Probe probe,
                                                      std::chrono::milliseconds timeout,
                                                      FaultKind hang_kind, const std::string& check,
                                                      const std::string& what) {
  Result r = run(std::move(probe), timeout);
  switch (r.outcome) {
    case Outcome::kDone:
      return std::move(r.findings);
    case Outcome::kTimedOut:
      return {{hang_kind, check,
               fmt::format("probe of {} did not finish in {} ms", what, timeout.count())}};
    case Outcome::kStillStuck:
      return {{hang_kind, check,
               fmt::format("an earlier probe of {} has not returned for {} ms", what,
                           r.stuck_for.count())}};
  }
  return {};
}

}  // namespace endure::agent::health
