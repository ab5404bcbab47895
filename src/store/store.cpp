#include "store/store.h"

#include "common/ids.h"
#include "store/statement.h"

namespace endure::store {

using detail::db_error;
using detail::Stmt;
using api::ClusterStatus;
using api::Health;
using api::LifecycleStatus;
using api::NodeStatus;
using api::RecoveryStage;

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS clusters (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  arn TEXT NOT NULL,
  status TEXT NOT NULL,
  failure_message TEXT NOT NULL DEFAULT '',
  spec TEXT NOT NULL,
  provisioning TEXT NOT NULL,
  idx INTEGER NOT NULL,
  applied_conf_hash TEXT NOT NULL DEFAULT '',
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL,
  software_update TEXT NOT NULL DEFAULT 'null',
  removed_slots TEXT NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX IF NOT EXISTS clusters_live_name ON clusters(name) WHERE status != 'Deleted';
CREATE UNIQUE INDEX IF NOT EXISTS clusters_live_idx ON clusters(idx) WHERE status != 'Deleted';
CREATE TABLE IF NOT EXISTS instances (
  instance_id TEXT PRIMARY KEY,
  cluster_id TEXT NOT NULL REFERENCES clusters(id),
  grp TEXT NOT NULL,
  slot INTEGER NOT NULL,
  node_name TEXT NOT NULL,
  status TEXT NOT NULL,
  message TEXT NOT NULL DEFAULT '',
  launch_time REAL NOT NULL,
  pid INTEGER NOT NULL DEFAULT 0,
  agent_token TEXT NOT NULL,
  lifecycle_status TEXT NOT NULL DEFAULT 'NotStarted',
  lifecycle_exit INTEGER NOT NULL DEFAULT -1,
  lifecycle_tail TEXT NOT NULL DEFAULT '',
  last_heartbeat REAL NOT NULL DEFAULT 0,
  terminated_at REAL NOT NULL DEFAULT 0,
  health TEXT NOT NULL DEFAULT 'Unknown',
  last_verdict TEXT NOT NULL DEFAULT '',
  verdict_time REAL NOT NULL DEFAULT 0,
  recovery TEXT NOT NULL DEFAULT '',
  recovery_reason TEXT NOT NULL DEFAULT '',
  recovery_stage TEXT NOT NULL DEFAULT '',
  recovery_since REAL NOT NULL DEFAULT 0,
  reboots INTEGER NOT NULL DEFAULT 0,
  replaces TEXT NOT NULL DEFAULT '',
  deep_check TEXT NOT NULL DEFAULT 'null',
  deep_result TEXT NOT NULL DEFAULT 'null'
);
-- At most one live instance per slot: the guard against duplicated instances.
CREATE UNIQUE INDEX IF NOT EXISTS instances_live_slot
  ON instances(cluster_id, grp, slot) WHERE terminated_at = 0;
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  cluster_id TEXT NOT NULL,
  time REAL NOT NULL,
  resource_type TEXT NOT NULL,
  grp TEXT NOT NULL DEFAULT '',
  instance_id TEXT NOT NULL DEFAULT '',
  node_name TEXT NOT NULL DEFAULT '',
  type TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS events_cluster ON events(cluster_id, id);
CREATE TABLE IF NOT EXISTS auto_resumes (
  cluster_id TEXT NOT NULL,
  job_id INTEGER NOT NULL,
  resumes INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL,
  mode TEXT NOT NULL DEFAULT 'Expand',
  reason TEXT NOT NULL DEFAULT '',
  nodes TEXT NOT NULL DEFAULT '[]',
  fault_time REAL NOT NULL DEFAULT 0,
  ready_time REAL NOT NULL DEFAULT 0,
  message TEXT NOT NULL DEFAULT '',
  overlap INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (cluster_id, job_id)
);
CREATE TABLE IF NOT EXISTS cluster_tokens (
  cluster_id TEXT PRIMARY KEY,
  auto_resume_token TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hosts (
  name TEXT PRIMARY KEY,
  pool TEXT NOT NULL,
  position INTEGER NOT NULL,
  registration TEXT NOT NULL,
  state TEXT NOT NULL,
  cluster_id TEXT NOT NULL DEFAULT '',
  instance_id TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS training_records (
  cluster_id TEXT NOT NULL,
  job_id INTEGER NOT NULL,
  resume INTEGER NOT NULL,
  kind TEXT NOT NULL,
  step INTEGER NOT NULL,
  time REAL NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (cluster_id, job_id, resume, kind, step, time)
);
-- A run's newest line, and its newest of a kind, without scanning the run (a scrape and the
-- console's poll ask for them; a run of weeks has a line a step).
CREATE INDEX IF NOT EXISTS training_records_time ON training_records(cluster_id, job_id, time);
CREATE INDEX IF NOT EXISTS training_records_kind ON training_records(cluster_id, job_id, kind, time);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
  BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
  BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
)sql";

// The state columns hold the enums' names (api/states.h); a name this build does not know
// (a newer endured's, a hand edit) reads as the column's default.
template <class E>
E stored(std::optional<E> parsed, E otherwise) {
  return parsed.value_or(otherwise);
}

constexpr const char* kClusterCols =
    "id, name, arn, status, failure_message, spec, provisioning, idx, applied_conf_hash, "
    "created_at, updated_at, software_update, removed_slots";

ClusterRow read_cluster(const Stmt& s) {
  ClusterRow r;
  r.id = s.text(0);
  r.name = s.text(1);
  r.arn = s.text(2);
  r.status = stored(api::parse_cluster_status(s.text(3)), ClusterStatus::kFailed);
  r.failure_message = s.text(4);
  r.spec = json::parse(s.text(5), nullptr, false);
  r.provisioning = json::parse(s.text(6), nullptr, false);
  r.index = s.i32(7);
  r.applied_conf_hash = s.text(8);
  r.created_at = s.real(9);
  r.updated_at = s.real(10);
  r.software_update = json::parse(s.text(11), nullptr, false);
  if (r.software_update.is_discarded()) r.software_update = nullptr;
  r.removed_slots = json::parse(s.text(12), nullptr, false);
  if (!r.removed_slots.is_object()) r.removed_slots = json::object();
  return r;
}

constexpr const char* kInstanceCols =
    "instance_id, cluster_id, grp, slot, node_name, status, message, launch_time, pid, "
    "agent_token, lifecycle_status, lifecycle_exit, lifecycle_tail, last_heartbeat, "
    "terminated_at, health, last_verdict, recovery, recovery_reason, recovery_stage, "
    "recovery_since, reboots, replaces, deep_check, deep_result, verdict_time";

InstanceRow read_instance(const Stmt& s) {
  InstanceRow r;
  r.instance_id = s.text(0);
  r.cluster_id = s.text(1);
  r.group = s.text(2);
  r.slot = s.i32(3);
  r.node_name = s.text(4);
  r.status = stored(api::parse_node_status(s.text(5)), NodeStatus::kFailure);
  r.message = s.text(6);
  r.launch_time = s.real(7);
  r.pid = s.i32(8);
  r.agent_token = s.text(9);
  r.lifecycle_status =
      stored(api::parse_lifecycle_status(s.text(10)), LifecycleStatus::kNotStarted);
  r.lifecycle_exit = s.i32(11);
  r.lifecycle_tail = s.text(12);
  r.last_heartbeat = s.real(13);
  r.terminated_at = s.real(14);
  r.health = stored(api::parse_health(s.text(15)), Health::kUnknown);
  r.last_verdict = s.text(16);
  r.recovery = api::parse_recovery_action(s.text(17));
  r.recovery_reason = s.text(18);
  r.recovery_stage = stored(api::parse_recovery_stage(s.text(19)), RecoveryStage::kNone);
  r.recovery_since = s.real(20);
  r.reboots = s.i32(21);
  r.replaces = s.text(22);
  r.deep_check = json::parse(s.text(23), nullptr, false);
  r.deep_result = json::parse(s.text(24), nullptr, false);
  r.verdict_time = s.real(25);
  if (r.deep_check.is_discarded()) r.deep_check = nullptr;
  if (r.deep_result.is_discarded()) r.deep_result = nullptr;
  return r;
}

void bind_instance_values(Stmt& s, const InstanceRow& r) {
  s.bind(r.cluster_id).bind(r.group).bind(r.slot).bind(r.node_name).bind(api::name(r.status))
      .bind(r.message).bind(r.launch_time).bind(r.pid).bind(r.agent_token)
      .bind(api::name(r.lifecycle_status)).bind(r.lifecycle_exit).bind(r.lifecycle_tail)
      .bind(r.last_heartbeat).bind(r.terminated_at).bind(api::name(r.health))
      .bind(r.last_verdict).bind(r.recovery ? api::name(*r.recovery) : "")
      .bind(r.recovery_reason).bind(api::name(r.recovery_stage)).bind(r.recovery_since)
      .bind(r.reboots).bind(r.replaces).bind(r.deep_check.dump()).bind(r.deep_result.dump())
      .bind(r.verdict_time);
}

}  // namespace

Result<std::unique_ptr<Store>> Store::open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    Error e = db_error(db, "open " + path);
    sqlite3_close(db);
    return e;
  }
  sqlite3_busy_timeout(db, 5000);
  std::unique_ptr<Store> store(new Store(db));
  sqlite3_commit_hook(
      db,
      [](void* counter) {
        ++*static_cast<std::atomic<long long>*>(counter);
        return 0;  // 0: let the commit go on
      },
      &store->commits_);
  // FULL: a committed transaction survives a power cut, not only a process crash.
  for (const char* pragma : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=FULL;",
                             "PRAGMA foreign_keys=ON;"}) {
    if (auto s = store->exec(pragma); !s) return s.error();
  }
  if (auto s = store->exec(kSchema); !s) return s.error();
  // Columns added after the first release: a database made before gets them here
  // (SQLite answers "duplicate column" when one is there already).
  for (const char* column :
       {"health TEXT NOT NULL DEFAULT 'Unknown'", "last_verdict TEXT NOT NULL DEFAULT ''",
        "recovery TEXT NOT NULL DEFAULT ''", "recovery_reason TEXT NOT NULL DEFAULT ''",
        "recovery_stage TEXT NOT NULL DEFAULT ''", "recovery_since REAL NOT NULL DEFAULT 0",
        "reboots INTEGER NOT NULL DEFAULT 0", "replaces TEXT NOT NULL DEFAULT ''",
        "deep_check TEXT NOT NULL DEFAULT 'null'", "deep_result TEXT NOT NULL DEFAULT 'null'",
        "verdict_time REAL NOT NULL DEFAULT 0"}) {
    auto s = store->exec(std::string("ALTER TABLE instances ADD COLUMN ") + column + ";");
    if (!s && s.error().message.find("duplicate column") == std::string::npos) return s.error();
  }
  for (const char* column :
       {"software_update TEXT NOT NULL DEFAULT 'null'", "removed_slots TEXT NOT NULL DEFAULT '{}'"}) {
    auto s = store->exec(std::string("ALTER TABLE clusters ADD COLUMN ") + column + ";");
    if (!s && s.error().message.find("duplicate column") == std::string::npos) return s.error();
  }
  for (const char* column : {"overlap INTEGER NOT NULL DEFAULT 0"}) {
    auto s = store->exec(std::string("ALTER TABLE auto_resumes ADD COLUMN ") + column + ";");
    if (!s && s.error().message.find("duplicate column") == std::string::npos) return s.error();
  }
  return store;
}

Store::~Store() {
  detail::forget_statements(db_);  // a connection with statements left does not close
  sqlite3_close(db_);
}

Status Store::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return make_error("StoreError", msg);
  }
  return {};
}

Status Store::transaction(const std::function<Status()>& fn) {
  std::lock_guard lock(mu_);
  if (tx_depth_ > 0) return fn();  // nested: the outer transaction commits
  if (auto s = exec("BEGIN IMMEDIATE;"); !s) return s;
  ++tx_depth_;
  Status result = fn();
  --tx_depth_;
  // A failed ROLLBACK leaves nothing more to undo: SQLite rolls back what it cannot keep.
  if (!result) {
    (void)exec("ROLLBACK;");
    return result;
  }
  if (auto s = exec("COMMIT;"); !s) {
    (void)exec("ROLLBACK;");
    return s;
  }
  return {};
}

Status Store::insert_cluster(const ClusterRow& r) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "INSERT INTO clusters (id, name, arn, status, failure_message, spec, provisioning, "
              "idx, applied_conf_hash, created_at, updated_at, software_update, removed_slots) "
              "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(r.id).bind(r.name).bind(r.arn).bind(api::name(r.status)).bind(r.failure_message).bind(r.spec.dump())
      .bind(r.provisioning.dump()).bind(r.index).bind(r.applied_conf_hash).bind(r.created_at)
      .bind(r.updated_at).bind(r.software_update.dump()).bind(r.removed_slots.dump());
  return s.run("insert cluster " + r.name);
}

Status Store::update_cluster(const ClusterRow& r) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "UPDATE clusters SET name=?, arn=?, status=?, failure_message=?, spec=?, "
              "provisioning=?, idx=?, applied_conf_hash=?, created_at=?, updated_at=?, "
              "software_update=?, removed_slots=? WHERE id=?");
  s.bind(r.name).bind(r.arn).bind(api::name(r.status)).bind(r.failure_message).bind(r.spec.dump())
      .bind(r.provisioning.dump()).bind(r.index).bind(r.applied_conf_hash).bind(r.created_at)
      .bind(r.updated_at).bind(r.software_update.dump()).bind(r.removed_slots.dump()).bind(r.id);
  return s.run("update cluster " + r.name);
}

std::optional<ClusterRow> Store::cluster_by_name(const std::string& name) {
  std::lock_guard lock(mu_);
  Stmt s(db_, (std::string("SELECT ") + kClusterCols +
               " FROM clusters WHERE name=? AND status != 'Deleted'").c_str());
  s.bind(name);
  if (s.step() == SQLITE_ROW) return read_cluster(s);
  return std::nullopt;
}

std::optional<ClusterRow> Store::cluster_by_id(const std::string& id) {
  std::lock_guard lock(mu_);
  Stmt s(db_, (std::string("SELECT ") + kClusterCols + " FROM clusters WHERE id=?").c_str());
  s.bind(id);
  if (s.step() == SQLITE_ROW) return read_cluster(s);
  return std::nullopt;
}

std::vector<ClusterRow> Store::clusters(bool include_deleted) {
  std::lock_guard lock(mu_);
  std::string sql = std::string("SELECT ") + kClusterCols + " FROM clusters";
  if (!include_deleted) sql += " WHERE status != 'Deleted'";
  sql += " ORDER BY created_at, id";
  Stmt s(db_, sql.c_str());
  std::vector<ClusterRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(read_cluster(s));
  return out;
}

Status Store::insert_instance(const InstanceRow& r) {
  std::lock_guard lock(mu_);
  Stmt s(db_, (std::string("INSERT INTO instances (") + kInstanceCols +
               ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)").c_str());
  s.bind(r.instance_id);
  bind_instance_values(s, r);
  forget_instance(r);
  return s.run("insert instance " + r.instance_id);
}

Status Store::update_instance(const InstanceRow& r) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "UPDATE instances SET cluster_id=?, grp=?, slot=?, node_name=?, status=?, "
              "message=?, launch_time=?, pid=?, agent_token=?, lifecycle_status=?, "
              "lifecycle_exit=?, lifecycle_tail=?, last_heartbeat=?, terminated_at=?, health=?, "
              "last_verdict=?, recovery=?, recovery_reason=?, recovery_stage=?, "
              "recovery_since=?, reboots=?, replaces=?, deep_check=?, deep_result=?, verdict_time=? "
              "WHERE instance_id=?");
  bind_instance_values(s, r);
  s.bind(r.instance_id);
  forget_instance(r);
  return s.run("update instance " + r.instance_id);
}

std::optional<InstanceRow> Store::instance(const std::string& instance_id) {
  std::lock_guard lock(mu_);
  if (auto it = instance_cache_.find(instance_id); it != instance_cache_.end()) return it->second;
  Stmt s(db_, (std::string("SELECT ") + kInstanceCols + " FROM instances WHERE instance_id=?")
                  .c_str());
  s.bind(instance_id);
  if (s.step() != SQLITE_ROW) return std::nullopt;
  InstanceRow row = read_instance(s);
  if (tx_depth_ == 0) instance_cache_[instance_id] = row;  // as instances(): not mid-transaction
  return row;
}

void Store::forget_instance(const InstanceRow& r) {
  instance_cache_.erase(r.instance_id);
  instances_cache_.erase({r.cluster_id, true});
  instances_cache_.erase({r.cluster_id, false});
}

std::vector<InstanceRow> Store::instances(const std::string& cluster_id, bool active_only) {
  std::lock_guard lock(mu_);
  const auto key = std::make_pair(cluster_id, active_only);
  if (auto it = instances_cache_.find(key); it != instances_cache_.end()) return it->second;
  std::string sql = std::string("SELECT ") + kInstanceCols + " FROM instances WHERE cluster_id=?";
  if (active_only) sql += " AND terminated_at = 0";
  sql += " ORDER BY grp, slot, launch_time";
  Stmt s(db_, sql.c_str());
  s.bind(cluster_id);
  std::vector<InstanceRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(read_instance(s));
  // Inside a transaction a read may see what a rollback undoes: not kept.
  if (tx_depth_ == 0) instances_cache_[key] = out;
  return out;
}

Status Store::mutate_instance(const std::string& instance_id,
                              const std::function<Status(InstanceRow&)>& fn) {
  return transaction([&]() -> Status {
    auto row = instance(instance_id);
    if (!row) return make_error("ResourceNotFound", "no instance " + instance_id);
    if (auto s = fn(*row); !s) return s;
    return update_instance(*row);
  });
}

Status Store::mutate_cluster(const std::string& id, const std::function<Status(ClusterRow&)>& fn) {
  return transaction([&]() -> Status {
    auto row = cluster_by_id(id);
    if (!row) return make_error("ResourceNotFound", "no cluster " + id);
    if (auto s = fn(*row); !s) return s;
    return update_cluster(*row);
  });
}

Result<long long> Store::append_event(EventRow r) {
  std::lock_guard lock(mu_);
  if (r.time == 0) r.time = ids::now_seconds();
  Stmt s(db_, "INSERT INTO events (cluster_id, time, resource_type, grp, instance_id, node_name, "
              "type, description) VALUES (?,?,?,?,?,?,?,?)");
  s.bind(r.cluster_id).bind(r.time).bind(r.resource_type).bind(r.group).bind(r.instance_id)
      .bind(r.node_name).bind(r.type).bind(r.description);
  if (auto st = s.run("append event"); !st) return st.error();
  return static_cast<long long>(sqlite3_last_insert_rowid(db_));
}

Status Store::transition(const std::string& instance_id,
                         const std::function<Status(InstanceRow&)>& fn,
                         const InstanceEvents& events) {
  return transaction([&]() -> Status {
    InstanceRow changed;
    Status s = mutate_instance(instance_id, [&](InstanceRow& r) -> Status {
      if (Status c = fn(r); !c) return c;
      changed = r;
      return {};
    });
    if (!s) return s;
    for (const auto& [type, description] : events) {
      auto ev = append_event({0, changed.cluster_id, 0, "Instance", changed.group,
                              changed.instance_id, changed.node_name, type, description});
      if (!ev) return ev.error();
    }
    return {};
  });
}

Status Store::transition_cluster(const std::string& id,
                                 const std::function<Status(ClusterRow&)>& fn,
                                 const std::string& type, const std::string& description) {
  return transaction([&]() -> Status {
    Status s = mutate_cluster(id, fn);
    if (!s) return s;
    auto ev = append_event({0, id, 0, "Cluster", "", "", "", type, description});
    return ev ? Status{} : Status(ev.error());
  });
}

namespace {

constexpr const char* kEventCols =
    "id, cluster_id, time, resource_type, grp, instance_id, node_name, type, description";

EventRow read_event(const Stmt& s) {
  EventRow r;
  r.id = s.i64(0);
  r.cluster_id = s.text(1);
  r.time = s.real(2);
  r.resource_type = s.text(3);
  r.group = s.text(4);
  r.instance_id = s.text(5);
  r.node_name = s.text(6);
  r.type = s.text(7);
  r.description = s.text(8);
  return r;
}

}  // namespace

std::vector<EventRow> Store::events(const std::string& cluster_id, long long after_id, int limit,
                                    const std::string& node_name) {
  std::lock_guard lock(mu_);
  std::string sql =
      std::string("SELECT ") + kEventCols + " FROM events WHERE cluster_id=? AND id > ?";
  if (!node_name.empty()) sql += " AND node_name=?";
  sql += " ORDER BY id LIMIT ?";
  Stmt s(db_, sql.c_str());
  s.bind(cluster_id).bind(after_id);
  if (!node_name.empty()) s.bind(node_name);
  s.bind(limit);
  std::vector<EventRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(read_event(s));
  return out;
}

std::optional<EventRow> Store::event(const std::string& cluster_id, long long id) {
  std::lock_guard lock(mu_);
  Stmt s(db_, (std::string("SELECT ") + kEventCols +
               " FROM events WHERE cluster_id=? AND id=?").c_str());
  s.bind(cluster_id).bind(id);
  if (s.step() == SQLITE_ROW) return read_event(s);
  return std::nullopt;
}

namespace {

constexpr const char* kAutoResumeCols =
    "cluster_id, job_id, resumes, state, mode, reason, nodes, fault_time, ready_time, message, "
    "overlap";

AutoResumeRow read_auto_resume(const Stmt& s) {
  AutoResumeRow r;
  r.cluster_id = s.text(0);
  r.job_id = s.i64(1);
  r.resumes = s.i32(2);
  r.state = s.text(3);
  r.mode = s.text(4);
  r.reason = s.text(5);
  r.nodes = json::parse(s.text(6), nullptr, false);
  if (!r.nodes.is_array()) r.nodes = json::array();
  r.fault_time = s.real(7);
  r.ready_time = s.real(8);
  r.message = s.text(9);
  r.overlap = s.i32(10) != 0;
  return r;
}

}  // namespace

std::optional<AutoResumeRow> Store::auto_resume(const std::string& cluster_id, long long job_id) {
  std::lock_guard lock(mu_);
  std::string sql = std::string("SELECT ") + kAutoResumeCols +
                    " FROM auto_resumes WHERE cluster_id=? AND job_id=?";
  Stmt s(db_, sql.c_str());
  s.bind(cluster_id).bind(job_id);
  if (s.step() != SQLITE_ROW) return std::nullopt;
  return read_auto_resume(s);
}

Status Store::put_auto_resume(const AutoResumeRow& r) {
  std::lock_guard lock(mu_);
  std::string sql = std::string("INSERT OR REPLACE INTO auto_resumes (") + kAutoResumeCols +
                    ") VALUES (?,?,?,?,?,?,?,?,?,?,?)";
  Stmt s(db_, sql.c_str());
  s.bind(r.cluster_id).bind(r.job_id).bind(r.resumes).bind(r.state).bind(r.mode).bind(r.reason)
      .bind(r.nodes.dump()).bind(r.fault_time).bind(r.ready_time).bind(r.message)
      .bind(r.overlap ? 1 : 0);
  return s.run("store auto-resume of job " + std::to_string(r.job_id));
}

std::vector<AutoResumeRow> Store::auto_resumes(const std::string& cluster_id,
                                               const std::string& state) {
  std::lock_guard lock(mu_);
  std::string sql = std::string("SELECT ") + kAutoResumeCols +
                    " FROM auto_resumes WHERE cluster_id=? AND state=? ORDER BY job_id";
  Stmt s(db_, sql.c_str());
  s.bind(cluster_id).bind(state);
  std::vector<AutoResumeRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(read_auto_resume(s));
  return out;
}

Result<std::string> Store::auto_resume_token(const std::string& cluster_id) {
  std::lock_guard lock(mu_);
  {
    Stmt s(db_, "SELECT auto_resume_token FROM cluster_tokens WHERE cluster_id=?");
    s.bind(cluster_id);
    if (s.step() == SQLITE_ROW) return s.text(0);
  }
  std::string token = ids::new_token();
  Stmt s(db_, "INSERT INTO cluster_tokens (cluster_id, auto_resume_token) VALUES (?,?)");
  s.bind(cluster_id).bind(token);
  if (auto st = s.run("store the auto-resume token"); !st) return st.error();
  return token;
}

}  // namespace endure::store
