// Counters and histograms of one cluster, folded from its event log (store::Store::events,
// append-only): health verdicts by fault kind, recoveries by action with the time from the
// verdict to the node drained and to the node back in service, auto-resumes granted and
// refused, and every event by type. Folding the whole log from id 0 gives the same numbers
// after an endured restart; folding only new events keeps a scrape O(new events).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "controller/metrics/text_format.h"
#include "store/store.h"

namespace endure::metrics {

// The fault kind of a NodeUnhealthy description ("Unhealthy: hang: no heartbeat -> Reboot"
// gives "hang"; an operator's "Unhealthy: Action:Replace set in Slurm -> Replace" gives
// "manual"). Kinds outside the recovery table (recovery_policy.h) read "other", so that an
// agent's free text cannot grow the label set.
std::string verdict_kind(std::string_view description);

// The action at the end of a verdict or request ("... -> Reboot"): Reboot, Replace, or "".
std::string verdict_action(std::string_view description);

class EventTally {
 public:
  // Folds one event; events come in id order, each once.
  void fold(const store::EventRow& event);
  long long cursor() const { return cursor_; }  // the last event id folded

  std::map<std::string, double> events;            // by event type
  std::map<std::string, double> verdicts;          // NodeUnhealthy by fault kind
  std::map<std::string, double> recoveries;        // NodeRebooting / NodeReplacing by action
  std::map<std::string, double> auto_resumes;      // by outcome: granted, refused, declined, ready, failed
  std::map<std::string, Histogram> to_drained;     // verdict → NodeDrained, by action
  std::map<std::string, Histogram> to_in_service;  // verdict → NodeReturnedToService

 private:
  // A node's recovery under way, by Slurm node name (a replacement keeps the name).
  struct Open {
    double detected = 0;
    std::string action;
    bool drained = false;
  };
  long long cursor_ = 0;
  std::map<std::string, Open> open_;
};

}  // namespace endure::metrics
