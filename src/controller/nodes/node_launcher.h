// A cluster's instances toward its layout: every slot gets one live instance, launched with
// the files of the node contract; instances whose slot left the layout, and orphans of a
// crash, are terminated. Each step is idempotent, so a controller killed anywhere resumes it.
#pragma once

#include <optional>
#include <string>

#include "controller/core/config.h"
#include "controller/core/health_monitor.h"
#include "controller/core/node_state.h"
#include "controller/nodes/warm_spares.h"
#include "provider/host/host_registry.h"
#include "provider/node_provider.h"
#include "spec/cluster_spec.h"
#include "spec/layout.h"
#include "store/store.h"

namespace endure::controller {

// The message of a node waiting for a host of its pool ("... rack-a"), which auto-resume
// repeats when it gives up on the node.
inline constexpr const char* kWaitingForHost = "waiting for an Available host in pool ";

// Continuous provisioning's backoff between tries of a slot whose launch failed.
inline constexpr double kFirstRetryWait = 1.0;     // seconds
inline constexpr double kLongestRetryWait = 300.0;

class NodeLauncher {
 public:
  NodeLauncher(store::Store& store, provider::NodeProvider& provider, const Config& config,
               HealthMonitor& health, provider::HostRegistry& hosts)
      : store_(store),
        provider_(provider),
        config_(config),
        health_(health),
        hosts_(hosts),
        spares_(store, provider, config, health) {}

  WarmSpares& spares() { return spares_; }

  // The cluster's munge key, made once.
  Status ensure_munge_key(const std::string& cluster_id);
  // Terminates and forgets instances whose slot left the layout, and any running instance
  // the store does not know as live (an orphan of a crash).
  void remove_extra_instances(const store::ClusterRow& cluster, const spec::ClusterLayout& layout);
  // Gives every empty slot a Pending instance row; the slot of a replaced worker takes a
  // warm spare of its group instead, when one is ready. A slot whose second try failed fails the
  // cluster (a failure of the host it was given does not count): the message to fail it
  // with is returned, and no row is added. With continuous provisioning nothing fails the
  // cluster: a slot is tried again after each failure, kFirstRetryWait after the first and
  // twice as long after each next one, up to kLongestRetryWait.
  std::optional<std::string> fill_slots(const store::ClusterRow& cluster,
                                        const spec::ClusterLayout& layout, bool continuous);
  // Launches every Pending instance that is not running yet, of the warm-spare slots or of
  // the others (spares); adopts one a dead controller launched; retires one that stopped
  // during creation.
  void launch_pending(const store::ClusterRow& cluster, const spec::ClusterModel& model,
                      bool spares);
  // Gives every Pending, not yet launched instance of a group on a host pool a host of its
  // pool; one the pool has none for waits, saying so (an event when it starts waiting).
  void claim_hosts(const store::ClusterRow& cluster, const spec::ClusterModel& model);
  // Marks an instance terminated (its files stay when keep_files) with its event.
  void retire_instance(const store::InstanceRow& row, NodeStatus status, const std::string& message,
                       bool keep_files);

 private:
  // The instance failed because its host did (the host was set aside): the pool's next
  // host is tried, and the slot's own retry is not spent.
  bool failed_by_its_host(const std::string& cluster_id, const store::InstanceRow& row);

  store::Store& store_;
  provider::NodeProvider& provider_;
  const Config& config_;
  HealthMonitor& health_;
  provider::HostRegistry& hosts_;
  WarmSpares spares_;
};

}  // namespace endure::controller
