#include "store/store.h"

#include "common/ids.h"
#include "store/columns.h"
#include "store/statement.h"

namespace endure::store {

using api::ClusterStatus;
using api::Health;
using api::LifecycleStatus;
using api::NodeStatus;
using api::RecoveryStage;
using detail::column;
using detail::Columns;
using detail::db_error;
using detail::json_column;
using detail::optional_state_column;
using detail::state_column;
using detail::Stmt;

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
  applied_memory_store TEXT NOT NULL DEFAULT '',
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL,
  software_update TEXT NOT NULL DEFAULT 'null',
  removed_slots TEXT NOT NULL DEFAULT '{}',
  logical_ids TEXT NOT NULL DEFAULT '{}',
  client_tokens TEXT NOT NULL DEFAULT '{}',
  scheduled_updates TEXT NOT NULL DEFAULT '{}'
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
  deep_result TEXT NOT NULL DEFAULT 'null',
  logical_id TEXT NOT NULL DEFAULT ''
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
  auto_resume_token TEXT NOT NULL,
  memory_store_token TEXT NOT NULL DEFAULT ''
);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
  BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
  BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
)sql";

bool any_json(const json&) { return true; }
bool is_object(const json& j) { return j.is_object(); }
bool is_array(const json& j) { return j.is_array(); }

const Columns<ClusterRow>& cluster_columns() {
  using R = ClusterRow;
  static const Columns<R> columns{
      column("id", &R::id),
      column("name", &R::name),
      column("arn", &R::arn),
      state_column("status", &R::status, api::parse_cluster_status, ClusterStatus::kFailed),
      column("failure_message", &R::failure_message),
      json_column("spec", &R::spec, any_json, json()),
      json_column("provisioning", &R::provisioning, any_json, json()),
      column("idx", &R::index),
      column("applied_conf_hash", &R::applied_conf_hash),
      column("applied_memory_store", &R::applied_memory_store),
      column("created_at", &R::created_at),
      column("updated_at", &R::updated_at),
      json_column("software_update", &R::software_update, any_json, json()),
      json_column("removed_slots", &R::removed_slots, is_object, json::object()),
      json_column("logical_ids", &R::logical_ids, is_object, json::object()),
      json_column("client_tokens", &R::client_tokens, is_object, json::object()),
      json_column("scheduled_updates", &R::scheduled_updates, is_object, json::object()),
  };
  return columns;
}

const Columns<InstanceRow>& instance_columns() {
  using R = InstanceRow;
  static const Columns<R> columns{
      column("instance_id", &R::instance_id),
      column("cluster_id", &R::cluster_id),
      column("grp", &R::group),
      column("slot", &R::slot),
      column("node_name", &R::node_name),
      state_column("status", &R::status, api::parse_node_status, NodeStatus::kFailure),
      column("message", &R::message),
      column("launch_time", &R::launch_time),
      column("pid", &R::pid),
      column("agent_token", &R::agent_token),
      state_column("lifecycle_status", &R::lifecycle_status, api::parse_lifecycle_status,
                   LifecycleStatus::kNotStarted),
      column("lifecycle_exit", &R::lifecycle_exit),
      column("lifecycle_tail", &R::lifecycle_tail),
      column("last_heartbeat", &R::last_heartbeat),
      column("terminated_at", &R::terminated_at),
      state_column("health", &R::health, api::parse_health, Health::kUnknown),
      column("last_verdict", &R::last_verdict),
      column("verdict_time", &R::verdict_time),
      optional_state_column("recovery", &R::recovery, api::parse_recovery_action),
      column("recovery_reason", &R::recovery_reason),
      state_column("recovery_stage", &R::recovery_stage, api::parse_recovery_stage,
                   RecoveryStage::kNone),
      column("recovery_since", &R::recovery_since),
      column("reboots", &R::reboots),
      column("replaces", &R::replaces),
      column("logical_id", &R::logical_id),
      json_column("deep_check", &R::deep_check, any_json, json()),
      json_column("deep_result", &R::deep_result, any_json, json()),
  };
  return columns;
}

const Columns<EventRow>& event_columns() {
  using R = EventRow;
  static const Columns<R> columns{
      column("id", &R::id),
      column("cluster_id", &R::cluster_id),
      column("time", &R::time),
      column("resource_type", &R::resource_type),
      column("grp", &R::group),
      column("instance_id", &R::instance_id),
      column("node_name", &R::node_name),
      column("type", &R::type),
      column("description", &R::description),
  };
  return columns;
}

const Columns<AutoResumeRow>& auto_resume_columns() {
  using R = AutoResumeRow;
  static const Columns<R> columns{
      column("cluster_id", &R::cluster_id),
      column("job_id", &R::job_id),
      column("resumes", &R::resumes),
      column("state", &R::state),
      column("mode", &R::mode),
      column("reason", &R::reason),
      json_column("nodes", &R::nodes, is_array, json::array()),
      column("fault_time", &R::fault_time),
      column("ready_time", &R::ready_time),
      column("message", &R::message),
      column("overlap", &R::overlap),
  };
  return columns;
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
  // Each file of the store makes its own tables.
  for (const char* schema : {kSchema, detail::kHostSchema, detail::kTrainingSchema}) {
    if (auto s = store->exec(schema); !s) return s.error();
  }
  // Columns added after the first release: a database made before gets them here
  // (SQLite answers "duplicate column" when one is there already).
  const std::pair<const char*, std::vector<const char*>> added[] = {
      {"instances",
       {"health TEXT NOT NULL DEFAULT 'Unknown'", "last_verdict TEXT NOT NULL DEFAULT ''",
        "recovery TEXT NOT NULL DEFAULT ''", "recovery_reason TEXT NOT NULL DEFAULT ''",
        "recovery_stage TEXT NOT NULL DEFAULT ''", "recovery_since REAL NOT NULL DEFAULT 0",
        "reboots INTEGER NOT NULL DEFAULT 0", "replaces TEXT NOT NULL DEFAULT ''",
        "deep_check TEXT NOT NULL DEFAULT 'null'", "deep_result TEXT NOT NULL DEFAULT 'null'",
        "verdict_time REAL NOT NULL DEFAULT 0", "logical_id TEXT NOT NULL DEFAULT ''"}},
      {"clusters",
       {"software_update TEXT NOT NULL DEFAULT 'null'", "removed_slots TEXT NOT NULL DEFAULT '{}'",
        "applied_memory_store TEXT NOT NULL DEFAULT ''", "logical_ids TEXT NOT NULL DEFAULT '{}'",
        "client_tokens TEXT NOT NULL DEFAULT '{}'", "scheduled_updates TEXT NOT NULL DEFAULT '{}'"}},
      {"cluster_tokens", {"memory_store_token TEXT NOT NULL DEFAULT ''"}},
      {"auto_resumes", {"overlap INTEGER NOT NULL DEFAULT 0"}},
  };
  for (const auto& [table, columns] : added) {
    for (const char* column : columns) {
      auto s = store->exec(std::string("ALTER TABLE ") + table + " ADD COLUMN " + column + ";");
      if (!s && s.error().message.find("duplicate column") == std::string::npos) return s.error();
    }
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
  Stmt s(db_, cluster_columns().insert("clusters").c_str());
  cluster_columns().bind_all(s, r);
  return s.run("insert cluster " + r.name);
}

Status Store::update_cluster(const ClusterRow& r) {
  std::lock_guard lock(mu_);
  Stmt s(db_, cluster_columns().update("clusters").c_str());
  cluster_columns().bind_update(s, r);
  return s.run("update cluster " + r.name);
}

std::optional<ClusterRow> Store::cluster_by_name(const std::string& name) {
  std::lock_guard lock(mu_);
  Stmt s(db_, ("SELECT " + cluster_columns().names() +
               " FROM clusters WHERE name=? AND status != 'Deleted'")
                  .c_str());
  s.bind(name);
  if (s.step() == SQLITE_ROW) return cluster_columns().read(s);
  return std::nullopt;
}

std::optional<ClusterRow> Store::cluster_by_id(const std::string& id) {
  std::lock_guard lock(mu_);
  Stmt s(db_, ("SELECT " + cluster_columns().names() + " FROM clusters WHERE id=?").c_str());
  s.bind(id);
  if (s.step() == SQLITE_ROW) return cluster_columns().read(s);
  return std::nullopt;
}

std::vector<ClusterRow> Store::clusters(bool include_deleted) {
  std::lock_guard lock(mu_);
  std::string sql = "SELECT " + cluster_columns().names() + " FROM clusters";
  if (!include_deleted) sql += " WHERE status != 'Deleted'";
  sql += " ORDER BY created_at, id";
  Stmt s(db_, sql.c_str());
  std::vector<ClusterRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(cluster_columns().read(s));
  return out;
}

Status Store::insert_instance(const InstanceRow& r) {
  std::lock_guard lock(mu_);
  Stmt s(db_, instance_columns().insert("instances").c_str());
  instance_columns().bind_all(s, r);
  forget_instance(r);
  return s.run("insert instance " + r.instance_id);
}

Status Store::update_instance(const InstanceRow& r) {
  std::lock_guard lock(mu_);
  Stmt s(db_, instance_columns().update("instances").c_str());
  instance_columns().bind_update(s, r);
  forget_instance(r);
  return s.run("update instance " + r.instance_id);
}

std::optional<InstanceRow> Store::instance(const std::string& instance_id) {
  std::lock_guard lock(mu_);
  if (auto it = instance_cache_.find(instance_id); it != instance_cache_.end()) return it->second;
  Stmt s(db_,
         ("SELECT " + instance_columns().names() + " FROM instances WHERE instance_id=?").c_str());
  s.bind(instance_id);
  if (s.step() != SQLITE_ROW) return std::nullopt;
  InstanceRow row = instance_columns().read(s);
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
  std::string sql = "SELECT " + instance_columns().names() + " FROM instances WHERE cluster_id=?";
  if (active_only) sql += " AND terminated_at = 0";
  sql += " ORDER BY grp, slot, launch_time";
  Stmt s(db_, sql.c_str());
  s.bind(cluster_id);
  std::vector<InstanceRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(instance_columns().read(s));
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
  Stmt s(db_, event_columns().insert_numbered("events").c_str());
  event_columns().bind_but_key(s, r);
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

std::vector<EventRow> Store::events(const std::string& cluster_id, long long after_id, int limit,
                                    const std::string& node_name) {
  std::lock_guard lock(mu_);
  std::string sql =
      "SELECT " + event_columns().names() + " FROM events WHERE cluster_id=? AND id > ?";
  if (!node_name.empty()) sql += " AND node_name=?";
  sql += " ORDER BY id LIMIT ?";
  Stmt s(db_, sql.c_str());
  s.bind(cluster_id).bind(after_id);
  if (!node_name.empty()) s.bind(node_name);
  s.bind(limit);
  std::vector<EventRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(event_columns().read(s));
  return out;
}

std::optional<EventRow> Store::event(const std::string& cluster_id, long long id) {
  std::lock_guard lock(mu_);
  Stmt s(
      db_,
      ("SELECT " + event_columns().names() + " FROM events WHERE cluster_id=? AND id=?").c_str());
  s.bind(cluster_id).bind(id);
  if (s.step() == SQLITE_ROW) return event_columns().read(s);
  return std::nullopt;
}

std::optional<AutoResumeRow> Store::auto_resume(const std::string& cluster_id, long long job_id) {
  std::lock_guard lock(mu_);
  std::string sql = "SELECT " + auto_resume_columns().names() +
                    " FROM auto_resumes WHERE cluster_id=? AND job_id=?";
  Stmt s(db_, sql.c_str());
  s.bind(cluster_id).bind(job_id);
  if (s.step() != SQLITE_ROW) return std::nullopt;
  return auto_resume_columns().read(s);
}

Status Store::put_auto_resume(const AutoResumeRow& r) {
  std::lock_guard lock(mu_);
  Stmt s(db_, auto_resume_columns().insert("auto_resumes", "INSERT OR REPLACE").c_str());
  auto_resume_columns().bind_all(s, r);
  return s.run("store auto-resume of job " + std::to_string(r.job_id));
}

std::vector<AutoResumeRow> Store::auto_resumes(const std::string& cluster_id,
                                               const std::string& state) {
  std::lock_guard lock(mu_);
  std::string sql = "SELECT " + auto_resume_columns().names() +
                    " FROM auto_resumes WHERE cluster_id=? AND state=? ORDER BY job_id";
  Stmt s(db_, sql.c_str());
  s.bind(cluster_id).bind(state);
  std::vector<AutoResumeRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(auto_resume_columns().read(s));
  return out;
}

Result<std::string> Store::auto_resume_token(const std::string& cluster_id) {
  return cluster_token(cluster_id, "auto_resume_token");
}

Result<std::string> Store::memory_store_token(const std::string& cluster_id) {
  return cluster_token(cluster_id, "memory_store_token");
}

// A cluster's row holds all its tokens, each made the first time it is asked for ("" until
// then: a row from before a kind of token existed, or made for another kind).
Result<std::string> Store::cluster_token(const std::string& cluster_id, const char* column) {
  std::lock_guard lock(mu_);
  const std::string name = column;
  bool have_row = false;
  {
    Stmt s(db_, ("SELECT " + name + " FROM cluster_tokens WHERE cluster_id=?").c_str());
    s.bind(cluster_id);
    if (s.step() == SQLITE_ROW) {
      have_row = true;
      if (std::string token = s.text(0); !token.empty()) return token;
    }
  }
  if (!have_row) {
    Stmt s(db_, "INSERT INTO cluster_tokens (cluster_id, auto_resume_token) VALUES (?, '')");
    s.bind(cluster_id);
    if (auto st = s.run("store the cluster's tokens"); !st) return st.error();
  }
  std::string token = ids::new_token();
  Stmt s(db_, ("UPDATE cluster_tokens SET " + name + "=? WHERE cluster_id=?").c_str());
  s.bind(token).bind(cluster_id);
  if (auto st = s.run("store the cluster's " + name); !st) return st.error();
  return token;
}

}  // namespace endure::store
