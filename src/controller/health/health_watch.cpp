#include "controller/health/health_watch.h"

#include <chrono>

namespace endure::controller {

using namespace std::chrono_literals;

HealthWatch::HealthWatch(provider::NodeProvider& provider, const Config& config,
                         HealthMonitor& health, std::function<void()> wake)
    : provider_(provider), config_(config), health_(health), wake_(std::move(wake)) {}

HealthWatch::~HealthWatch() { stop(); }

void HealthWatch::start() {
  thread_ = std::thread([this] {
    while (!stopping_) {
      look();
      std::this_thread::sleep_for(100ms);
    }
  });
}

void HealthWatch::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

bool HealthWatch::look() {
  // Thousands of nodes ten times a second: the list of nodes is copied only when it
  // changed, and their ages read in one pass.
  if (long long generation = health_.heard_generation(); generation != heard_generation_) {
    heard_ = health_.heard();
    heard_generation_ = generation;
  }
  const std::set<std::string> silent = health_.silent_for_at_least(config_.suspect_after_seconds);
  bool woke = false;
  std::set<std::string> flagged;
  for (const auto& [cluster_id, instance_id] : heard_) {
    if (!silent.count(instance_id) && provider_.running(cluster_id, instance_id)) continue;
    // Woken for once; again only after it spoke (or came back) and fell silent anew.
    flagged.insert(instance_id);
    if (!flagged_.count(instance_id)) woke = true;
  }
  flagged_ = std::move(flagged);
  if (woke) wake_();
  return woke;
}

}  // namespace endure::controller
