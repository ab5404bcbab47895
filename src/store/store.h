// endured's state: clusters, instances, the append-only event log and the registered hosts,
// in SQLite (WAL).
//
// Every method is one transaction; transaction() groups several so that a crash leaves
// all of them or none. The store is safe to use from several threads (one connection,
// serialised by a mutex). Rows are plain structs; the reconciler decides what they mean.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/states.h"
#include "common/json.h"
#include "common/result.h"

namespace endure::store {

struct ClusterRow {
  std::string id;    // 12 hex digits
  std::string name;  // ClusterName, unique among clusters not deleted
  std::string arn;
  api::ClusterStatus status = api::ClusterStatus::kCreating;
  std::string failure_message;
  json spec;          // the validated CreateCluster request, as ClusterSpec::to_json()
  json provisioning;  // the validated provisioning parameters
  int index = 0;      // small number, unique among live clusters: picks ports and addresses
  std::string applied_conf_hash;        // slurm.conf last pushed to Slurm
  // The memory tier every running node holds (spec::memory_store_setting; "": none).
  std::string applied_memory_store;
  json software_update;                 // the UpdateClusterSoftware under way (null when none)
  json removed_slots = json::object();  // {group: [slot]}: nodes BatchDeleteClusterNodes removed
  // {node name: NodeLogicalId} of every slot of the layout, given when the slot is asked
  // for (before it has an instance) and kept through its replacements until it is removed.
  json logical_ids = json::object();
  // {ClientToken: {"Request", "Added", "Failed", "Time"}}: BatchAddClusterNodes calls of
  // the last 8 hours, so that a call made again with its token adds nothing twice.
  json client_tokens = json::object();
  // {group: {"Expression", "Since", "Last"}}: each group's ScheduledUpdateConfig as endured
  // counts it, from when it was set (Since) and its last run (Last; null before the first).
  json scheduled_updates = json::object();
  double created_at = 0;
  double updated_at = 0;
};

struct InstanceRow {
  std::string instance_id;  // i- + 17 hex
  std::string cluster_id;
  std::string group;      // InstanceGroupName
  int slot = 0;           // n in the hostname <group>-<n>
  std::string node_name;  // <group>-<n>, the Slurm NodeName and hostname
  api::NodeStatus status = api::NodeStatus::kPending;
  std::string message;
  double launch_time = 0;
  int pid = 0;                   // host pid of the node's first process (0: not launched)
  std::string agent_token;       // the node's join credential
  api::LifecycleStatus lifecycle_status = api::LifecycleStatus::kNotStarted;
  int lifecycle_exit = -1;
  std::string lifecycle_tail;
  double last_heartbeat = 0;
  double terminated_at = 0;  // 0 while the instance exists
  // Health and recovery (see controller/recovery_policy.h).
  api::Health health = api::Health::kUnknown;
  std::string last_verdict;        // "Unhealthy: hang: no heartbeat for 6 s -> Reboot"
  double verdict_time = 0;         // when last_verdict was given (0: never)
  std::optional<api::RecoveryAction> recovery;  // the action under way, if any
  std::string recovery_reason;
  api::RecoveryStage recovery_stage = api::RecoveryStage::kNone;
  double recovery_since = 0;
  int reboots = 0;       // reboots of this instance
  std::string replaces;  // the instance this one replaced, if any
  std::string logical_id;  // its slot's NodeLogicalId when it was launched ("" before them)
  json deep_check;       // the deep health check ordered for this node (null when none)
  json deep_result;      // what the node reported for it (null until then)
};

struct EventRow {
  long long id = 0;
  std::string cluster_id;
  double time = 0;
  std::string resource_type;  // Cluster, InstanceGroup, Instance
  std::string group;
  std::string instance_id;
  std::string node_name;
  std::string type;  // ClusterCreating, InstanceLaunched, LifecycleFailed, ...
  std::string description;
};

// Auto-resume of one Slurm job (see controller/auto_resume_manager.h): how often its steps
// were re-run and the recovery that the next re-run waits for.
// A host of a pool: its registration (the pool file's entry, as JSON) and what endure does
// with it (a provider::HostState name; the cluster and instance it serves; why it was set
// aside).
struct HostRow {
  std::string name;
  std::string pool;
  int position = 0;  // in the pool file: hosts are drawn in this order
  json registration = json::object();
  std::string state;
  std::string cluster_id;
  std::string instance_id;
  std::string reason;
  double updated_at = 0;
};

struct AutoResumeRow {
  std::string cluster_id;
  long long job_id = 0;
  int resumes = 0;             // re-runs granted so far (the bound counts these)
  std::string state;           // Waiting, Ready, Failed
  std::string mode;            // Expand (grow the job back) or Requeue (its batch host died)
  std::string reason;          // the fault behind the last re-run
  json nodes = json::array();  // the faulty nodes the job waits for
  double fault_time = 0;       // when the step failed (or the batch host was lost)
  double ready_time = 0;       // when the job was whole again
  std::string message;         // why it is Failed, or what it waits for
  // A step of the failed run is still listed on the repaired nodes (Slurm keeps a step
  // whose other tasks had ended before its node died): the re-run must overlap it.
  bool overlap = false;
};

// A line endure-train's rank 0 printed (store/training_store.cpp), filed under the try that
// printed it (its auto-resume count). Kind is the line's own: start, step, eval,
// checkpoint, done, stopped, or other.
struct TrainingRecord {
  long long job_id = 0;
  int resume = 0;
  std::string kind;
  long long step = -1;  // -1: the line names no step
  double time = 0;
  json record;
};

// One job's training as the latest records tell it.
struct TrainingRun {
  long long job_id = 0;
  double first_time = 0;
  double last_time = 0;
  int resumes = 0;                                // the highest try's auto-resume count
  std::optional<TrainingRecord> last_step;        // the newest step line
  std::optional<TrainingRecord> last_checkpoint;  // the newest checkpoint line
  std::string end_kind;                           // done or stopped when the newest try ended so
};

class Store {
 public:
  // Opens (creating if needed) the database at path, in WAL mode with full fsync.
  static Result<std::unique_ptr<Store>> open(const std::string& path);
  ~Store();

  // Runs fn inside one transaction: committed when fn returns ok, rolled back otherwise.
  // Calls to this store from fn join the same transaction.
  Status transaction(const std::function<Status()>& fn);
  // Transactions committed since open (each a write and an fsync), explicit or not.
  long long commits() const { return commits_; }

  Status insert_cluster(const ClusterRow& row);
  Status update_cluster(const ClusterRow& row);                        // by id; every column
  std::optional<ClusterRow> cluster_by_name(const std::string& name);  // not Deleted
  std::optional<ClusterRow> cluster_by_id(const std::string& id);
  std::vector<ClusterRow> clusters(bool include_deleted = false);
  // As mutate_instance, for a cluster by id.
  Status mutate_cluster(const std::string& id, const std::function<Status(ClusterRow&)>& fn);
  // As transition (below), for a cluster and one event of its own.
  Status transition_cluster(const std::string& id, const std::function<Status(ClusterRow&)>& fn,
                            const std::string& type, const std::string& description);

  Status insert_instance(const InstanceRow& row);
  Status update_instance(const InstanceRow& row);  // by instance_id; every column
  std::optional<InstanceRow> instance(const std::string& instance_id);
  // Reads the instance, lets fn change it, writes it back, in one transaction, so that
  // concurrent writers of different fields do not undo each other. Fails with
  // ResourceNotFound when there is no such instance; fn may return an error to abort.
  Status mutate_instance(const std::string& instance_id,
                         const std::function<Status(InstanceRow&)>& fn);
  // An instance's state change and its events, in one transaction: a crash leaves all or
  // none. fn changes the row (or returns an error: nothing is written); each event
  // ({type, description}) names the instance. endured's one caller is controller::transition,
  // which checks the change against the node's transition table.
  using InstanceEvents = std::vector<std::pair<std::string, std::string>>;
  Status transition(const std::string& instance_id, const std::function<Status(InstanceRow&)>& fn,
                    const InstanceEvents& events);
  // Instances of a cluster, by group then slot then launch time.
  std::vector<InstanceRow> instances(const std::string& cluster_id, bool active_only);

  // Appends an event (its id and, when 0, its time are filled in) and returns its id.
  Result<long long> append_event(EventRow row);
  std::vector<EventRow> events(const std::string& cluster_id, long long after_id = 0,
                               int limit = 1000, const std::string& node_name = "");
  // One event of a cluster by its id; nullopt when the cluster has none of that id.
  std::optional<EventRow> event(const std::string& cluster_id, long long id);

  std::optional<AutoResumeRow> auto_resume(const std::string& cluster_id, long long job_id);
  Status put_auto_resume(const AutoResumeRow& row);  // insert or replace, by (cluster, job)
  // A cluster's records in a state, oldest job first.
  std::vector<AutoResumeRow> auto_resumes(const std::string& cluster_id, const std::string& state);
  // The cluster's auto-resume credential (made at first use): it allows only the
  // AutoResume* calls, so it may be readable by every user of the cluster's nodes.
  Result<std::string> auto_resume_token(const std::string& cluster_id);
  // The cluster's credential for its nodes' memory stores (made at first use, kept for the
  // cluster's life so that a replaced node gets the same): readable by every user of its
  // nodes, since the training job is the stores' client.
  Result<std::string> memory_store_token(const std::string& cluster_id);

  // Files a job's training lines (each an object with a numeric "time"; "resume" defaults
  // to 0). A line already filed (same try, kind, step and time) is filed once: a reporter
  // may send a batch again. Returns how many were new.
  Result<int> put_training_records(const std::string& cluster_id, long long job_id,
                                   const json& records);
  // The jobs of a cluster that reported training, newest job first.
  std::vector<TrainingRun> training_runs(const std::string& cluster_id);
  // A job's lines of one kind by time; for "step", one line a step (the try that reached
  // it last), every stride-th step when stride > 1.
  std::vector<TrainingRecord> training_records(const std::string& cluster_id, long long job_id,
                                               const std::string& kind, long long stride = 1);
  long long training_steps(const std::string& cluster_id, long long job_id);

  // The registered hosts, by pool and their place in the pool file (store/host_store.cpp).
  std::vector<HostRow> hosts();
  // Replaces every host record at once (a pool file registered again, merged with the
  // hosts known: provider/host/host_inventory.h).
  Status replace_hosts(const std::vector<HostRow>& rows);
  // As mutate_instance, for a host by name.
  Status mutate_host(const std::string& name, const std::function<Status(HostRow&)>& fn);

 private:
  explicit Store(sqlite3* db) : db_(db) {}
  Status exec(const std::string& sql);
  // Drops an instance's row from the caches (and its cluster's rows): at every write of it.
  void forget_instance(const InstanceRow& r);
  // One of the cluster's tokens (a column of cluster_tokens), made at first use.
  Result<std::string> cluster_token(const std::string& cluster_id, const char* column);

  sqlite3* db_;
  std::recursive_mutex mu_;
  int tx_depth_ = 0;
  std::atomic<long long> commits_{0};
  // A cluster's instances as last read, by (cluster id, active only): a reconcile pass reads
  // them a dozen times, and a heartbeat writes none. Dropped at each write of the cluster's
  // instances; never filled inside a transaction.
  std::map<std::pair<std::string, bool>, std::vector<InstanceRow>> instances_cache_;
  // Instance rows by id as last read, on the same terms: every heartbeat looks one up.
  std::unordered_map<std::string, InstanceRow> instance_cache_;
};

}  // namespace endure::store
