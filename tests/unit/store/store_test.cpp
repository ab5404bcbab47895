// The SQLite store: schema, round trips, uniqueness guards, transactions, the event log.
#include "store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/ids.h"
#include "controller/core/transition.h"
#include "support/store_fixture.h"

namespace endure::store {
namespace {

class StoreTest : public test::StoreFixture {};

ClusterRow make_cluster(const std::string& id, const std::string& name, int index,
                        const std::string& status = "Creating") {
  ClusterRow r;
  r.id = id;
  r.name = name;
  r.arn = "arn:aws:sagemaker:local:000000000000:cluster/" + id;
  r.status = *api::parse_cluster_status(status);
  r.failure_message = "";
  r.spec = {
      {"ClusterName", name},
      {"InstanceGroups",
       {{{"InstanceGroupName", "controller"}, {"InstanceType", "local.c1"}, {"InstanceCount", 1}}}},
      {"NodeRecovery", "Automatic"}};
  r.provisioning = {{"version", "1.0.0"}, {"controller_group", "controller"}};
  r.index = index;
  r.applied_conf_hash = "";
  r.created_at = 1700000000.25;
  r.updated_at = 1700000000.5;
  return r;
}

InstanceRow make_instance(const std::string& instance_id, const std::string& cluster_id,
                          const std::string& group, int slot) {
  InstanceRow r;
  r.instance_id = instance_id;
  r.cluster_id = cluster_id;
  r.group = group;
  r.slot = slot;
  r.node_name = group + "-" + std::to_string(slot);
  r.status = api::NodeStatus::kPending;
  r.launch_time = 1700000100.125;
  r.agent_token = "token-" + instance_id;
  r.lifecycle_status = api::LifecycleStatus::kNotStarted;
  return r;
}

EventRow make_event(const std::string& cluster_id, const std::string& type,
                    const std::string& node_name = "") {
  EventRow e;
  e.cluster_id = cluster_id;
  e.resource_type = node_name.empty() ? "Cluster" : "Instance";
  e.node_name = node_name;
  e.type = type;
  e.description = "event " + type;
  return e;
}

void expect_same_cluster(const ClusterRow& got, const ClusterRow& want) {
  EXPECT_EQ(got.id, want.id);
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.arn, want.arn);
  EXPECT_EQ(got.status, want.status);
  EXPECT_EQ(got.failure_message, want.failure_message);
  EXPECT_EQ(got.spec, want.spec);
  EXPECT_EQ(got.spec.dump(), want.spec.dump());  // key order kept too
  EXPECT_EQ(got.provisioning, want.provisioning);
  EXPECT_EQ(got.provisioning.dump(), want.provisioning.dump());
  EXPECT_EQ(got.index, want.index);
  EXPECT_EQ(got.applied_conf_hash, want.applied_conf_hash);
  EXPECT_EQ(got.applied_memory_store, want.applied_memory_store);
  EXPECT_DOUBLE_EQ(got.created_at, want.created_at);
  EXPECT_DOUBLE_EQ(got.updated_at, want.updated_at);
  EXPECT_EQ(got.software_update, want.software_update);
  EXPECT_EQ(got.removed_slots, want.removed_slots);
}

void expect_same_instance(const InstanceRow& got, const InstanceRow& want) {
  EXPECT_EQ(got.instance_id, want.instance_id);
  EXPECT_EQ(got.cluster_id, want.cluster_id);
  EXPECT_EQ(got.group, want.group);
  EXPECT_EQ(got.slot, want.slot);
  EXPECT_EQ(got.node_name, want.node_name);
  EXPECT_EQ(got.status, want.status);
  EXPECT_EQ(got.message, want.message);
  EXPECT_DOUBLE_EQ(got.launch_time, want.launch_time);
  EXPECT_EQ(got.pid, want.pid);
  EXPECT_EQ(got.agent_token, want.agent_token);
  EXPECT_EQ(got.lifecycle_status, want.lifecycle_status);
  EXPECT_EQ(got.lifecycle_exit, want.lifecycle_exit);
  EXPECT_EQ(got.lifecycle_tail, want.lifecycle_tail);
  EXPECT_DOUBLE_EQ(got.last_heartbeat, want.last_heartbeat);
  EXPECT_DOUBLE_EQ(got.terminated_at, want.terminated_at);
  EXPECT_EQ(got.health, want.health);
  EXPECT_EQ(got.last_verdict, want.last_verdict);
  EXPECT_DOUBLE_EQ(got.verdict_time, want.verdict_time);
  EXPECT_EQ(got.recovery, want.recovery);
  EXPECT_EQ(got.recovery_reason, want.recovery_reason);
  EXPECT_EQ(got.recovery_stage, want.recovery_stage);
  EXPECT_DOUBLE_EQ(got.recovery_since, want.recovery_since);
  EXPECT_EQ(got.reboots, want.reboots);
  EXPECT_EQ(got.replaces, want.replaces);
  EXPECT_EQ(got.deep_check, want.deep_check);
  EXPECT_EQ(got.deep_result, want.deep_result);
}

void expect_same_event(const EventRow& got, const EventRow& want) {
  EXPECT_EQ(got.id, want.id);
  EXPECT_EQ(got.cluster_id, want.cluster_id);
  EXPECT_DOUBLE_EQ(got.time, want.time);
  EXPECT_EQ(got.resource_type, want.resource_type);
  EXPECT_EQ(got.group, want.group);
  EXPECT_EQ(got.instance_id, want.instance_id);
  EXPECT_EQ(got.node_name, want.node_name);
  EXPECT_EQ(got.type, want.type);
  EXPECT_EQ(got.description, want.description);
}

// Runs one statement through a separate raw connection to the same file.
int raw_exec(const std::string& path, const std::string& sql, std::string* message = nullptr) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_close(db);
    return rc;
  }
  sqlite3_busy_timeout(db, 5000);
  char* err = nullptr;
  rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (message) *message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  return rc;
}

// Runs SQL on a database file that need not exist yet.
int raw_exec_creating(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
  return rc;
}

// The single text value a query returns, through a separate raw connection.
std::string raw_query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      auto text = sqlite3_column_text(stmt, 0);
      if (text) out = reinterpret_cast<const char*>(text);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return out;
}

TEST_F(StoreTest, OpenCreatesFileAndSchemaInWalMode) {
  EXPECT_TRUE(std::filesystem::exists(db_path_));
  for (const char* table : {"clusters", "instances", "events"}) {
    EXPECT_EQ(raw_query(db_path_, std::string("SELECT name FROM sqlite_master WHERE type='table' "
                                              "AND name='") +
                                      table + "'"),
              table);
  }
  EXPECT_EQ(raw_query(db_path_, "PRAGMA journal_mode"), "wal");
  EXPECT_TRUE(store_->clusters(true).empty());
}

TEST_F(StoreTest, OpenFailsInMissingFolder) {
  auto opened = Store::open((dir_.path() / "missing" / "endured.db").string());
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().code, "StoreError");
}

TEST_F(StoreTest, ReopeningKeepsData) {
  ClusterRow c = make_cluster("aaaaaaaaaaaa", "ml", 1, "InService");
  ASSERT_TRUE(store_->insert_cluster(c).ok());
  InstanceRow i = make_instance("i-00000000000000001", c.id, "controller", 0);
  ASSERT_TRUE(store_->insert_instance(i).ok());
  auto event_id = store_->append_event(make_event(c.id, "ClusterCreating"));
  ASSERT_TRUE(event_id.ok());

  reopen();

  auto got = store_->cluster_by_id(c.id);
  ASSERT_TRUE(got.has_value());
  expect_same_cluster(*got, c);
  auto got_instance = store_->instance(i.instance_id);
  ASSERT_TRUE(got_instance.has_value());
  expect_same_instance(*got_instance, i);
  auto events = store_->events(c.id);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].id, *event_id);
  EXPECT_EQ(events[0].type, "ClusterCreating");

  // Reopening does not reset the event ids either.
  auto next_id = store_->append_event(make_event(c.id, "ClusterInService"));
  ASSERT_TRUE(next_id.ok());
  EXPECT_GT(*next_id, *event_id);
}

TEST_F(StoreTest, ClusterRoundTripsEveryField) {
  ClusterRow c = make_cluster("0123456789ab", "train-1", 3, "Creating");
  c.failure_message = "quote ' and \"double\" and unicode \xc3\xa9";
  c.applied_conf_hash = "0123456789abcdef";
  ASSERT_TRUE(store_->insert_cluster(c).ok());

  auto by_id = store_->cluster_by_id(c.id);
  ASSERT_TRUE(by_id.has_value());
  expect_same_cluster(*by_id, c);
  auto by_name = store_->cluster_by_name(c.name);
  ASSERT_TRUE(by_name.has_value());
  expect_same_cluster(*by_name, c);

  // Every column but the id changes.
  ClusterRow u = c;
  u.name = "train-2";
  u.arn = c.arn + "-x";
  u.status = api::ClusterStatus::kFailed;
  u.failure_message = "lifecycle script failed";
  u.spec = {{"ClusterName", "train-2"}, {"Nested", {{"z", 1}, {"a", {1, 2, 3}}}}};
  u.provisioning = {{"worker_groups", json::array()}, {"controller_group", "ctl"}};
  u.index = 7;
  u.applied_conf_hash = "fedcba9876543210";
  u.applied_memory_store = "Enable, 30 %";
  u.software_update = {{"Id", "su-1"}, {"Remaining", json::array({"worker-0"})}};
  u.removed_slots = {{"worker", {1, 3}}};
  u.created_at = 1800000000.75;
  u.updated_at = 1800000001.0;
  ASSERT_TRUE(store_->update_cluster(u).ok());

  auto updated = store_->cluster_by_id(c.id);
  ASSERT_TRUE(updated.has_value());
  expect_same_cluster(*updated, u);
  EXPECT_FALSE(store_->cluster_by_name("train-1").has_value());
  ASSERT_TRUE(store_->cluster_by_name("train-2").has_value());

  auto all = store_->clusters(true);
  ASSERT_EQ(all.size(), 1u);
  expect_same_cluster(all[0], u);
  EXPECT_FALSE(store_->cluster_by_id("ffffffffffff").has_value());
}

// The memory stores' credential: one per cluster, kept across restarts, beside the
// auto-resume token of the same cluster (either may be asked for first).
TEST_F(StoreTest, MemoryStoreTokenIsPerClusterStableAndApartFromTheAutoResumeOne) {
  auto first = store_->memory_store_token("aaaaaaaaaaaa");
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->size(), 48u);
  auto auto_resume = store_->auto_resume_token("aaaaaaaaaaaa");
  ASSERT_TRUE(auto_resume.ok()) << auto_resume.error().message;
  EXPECT_EQ(auto_resume->size(), 48u);
  EXPECT_NE(*auto_resume, *first);
  EXPECT_EQ(*store_->memory_store_token("aaaaaaaaaaaa"), *first);

  auto other_resume = store_->auto_resume_token("bbbbbbbbbbbb");
  ASSERT_TRUE(other_resume.ok());
  auto other = store_->memory_store_token("bbbbbbbbbbbb");
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_NE(*other, *first);

  reopen();
  EXPECT_EQ(*store_->memory_store_token("aaaaaaaaaaaa"), *first);
  EXPECT_EQ(*store_->auto_resume_token("aaaaaaaaaaaa"), *auto_resume);
  EXPECT_EQ(*store_->memory_store_token("bbbbbbbbbbbb"), *other);
  EXPECT_EQ(*store_->auto_resume_token("bbbbbbbbbbbb"), *other_resume);
}

// A database from before the memory tier: its tables get the new columns at open, and its
// clusters keep their auto-resume tokens.
TEST_F(StoreTest, ADatabaseFromBeforeTheMemoryTierGetsItsColumns) {
  store_.reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_path_ + suffix);
  ASSERT_EQ(raw_exec_creating(db_path_,
                              "CREATE TABLE clusters (id TEXT PRIMARY KEY, name TEXT NOT NULL, "
                              "arn TEXT NOT NULL, status TEXT NOT NULL, failure_message TEXT "
                              "NOT NULL DEFAULT '', spec TEXT NOT NULL, provisioning TEXT NOT "
                              "NULL, idx INTEGER NOT NULL, applied_conf_hash TEXT NOT NULL "
                              "DEFAULT '', created_at REAL NOT NULL, updated_at REAL NOT NULL, "
                              "software_update TEXT NOT NULL DEFAULT 'null', removed_slots "
                              "TEXT NOT NULL DEFAULT '{}');"
                              "CREATE TABLE cluster_tokens (cluster_id TEXT PRIMARY KEY, "
                              "auto_resume_token TEXT NOT NULL);"
                              "INSERT INTO cluster_tokens VALUES ('aaaaaaaaaaaa', 'old-token');"),
            SQLITE_OK);
  reopen();
  EXPECT_EQ(*store_->auto_resume_token("aaaaaaaaaaaa"), "old-token");
  auto token = store_->memory_store_token("aaaaaaaaaaaa");
  ASSERT_TRUE(token.ok()) << token.error().message;
  EXPECT_EQ(token->size(), 48u);
  ClusterRow c = make_cluster("aaaaaaaaaaaa", "ml", 1);
  c.applied_memory_store = "Enable, 20 %";
  ASSERT_TRUE(store_->insert_cluster(c).ok());
  expect_same_cluster(*store_->cluster_by_id(c.id), c);
}

// A reconcile pass decides a cluster's status on the row it read; an operator's call made
// since (DeleteCluster, UpdateCluster) stands: the new status and its event are refused.
TEST_F(StoreTest, AClusterStatusDecidedOnAnOlderRowIsRefused) {
  ClusterRow read = make_cluster("0123456789ab", "ml", 1, "Updating");
  ASSERT_TRUE(store_->insert_cluster(read).ok());
  auto in_service = [](ClusterRow& c) { c.status = api::ClusterStatus::kInService; };
  ASSERT_TRUE(store_->mutate_cluster(read.id, [](ClusterRow& c) -> Status {
    c.updated_at += 1;  // UpdateCluster again
    return {};
  }));
  EXPECT_FALSE(controller::transition(*store_, read, in_service, "ClusterInService", "done"));
  read = *store_->cluster_by_id(read.id);
  ASSERT_TRUE(store_->mutate_cluster(read.id, [](ClusterRow& c) -> Status {
    c.status = api::ClusterStatus::kDeleting;
    return {};
  }));
  EXPECT_FALSE(controller::transition(*store_, read, in_service, "ClusterInService", "done"));
  EXPECT_EQ(store_->cluster_by_id(read.id)->status, api::ClusterStatus::kDeleting);
  EXPECT_TRUE(store_->events(read.id).empty());
  // What the pass did to Slurm is recorded all the same: no status changes with it.
  EXPECT_TRUE(controller::transition(
      *store_, read, [](ClusterRow& c) { c.applied_conf_hash = "h1"; }, "SlurmConfigApplied", ""));
  auto fresh = store_->cluster_by_id(read.id);
  EXPECT_TRUE(controller::transition(
      *store_, *fresh, [](ClusterRow& c) { c.status = api::ClusterStatus::kDeleted; },
      "ClusterDeleted", ""));
  EXPECT_EQ(store_->events(read.id).size(), 2u);
}

TEST_F(StoreTest, InstanceRoundTripsEveryField) {
  ClusterRow c = make_cluster("0123456789ab", "ml", 1);
  ASSERT_TRUE(store_->insert_cluster(c).ok());
  InstanceRow i = make_instance("i-0123456789abcdef0", c.id, "worker", 2);
  ASSERT_TRUE(store_->insert_instance(i).ok());
  auto got = store_->instance(i.instance_id);
  ASSERT_TRUE(got.has_value());
  expect_same_instance(*got, i);

  InstanceRow u = i;
  u.group = "worker-b";
  u.slot = 5;
  u.node_name = "worker-b-5";
  u.status = api::NodeStatus::kRunning;
  u.message = "multi\nline message";
  u.launch_time = 1700000200.5;
  u.pid = 424242;
  u.agent_token = "another-token";
  u.lifecycle_status = api::LifecycleStatus::kFailed;
  u.lifecycle_exit = 3;
  u.lifecycle_tail = "line 1\nline 2\n";
  u.last_heartbeat = 1700000300.25;
  u.terminated_at = 1700000400.75;
  u.health = api::Health::kUnhealthy;
  u.last_verdict = "Unhealthy: xid: Xid 79 -> Replace";
  u.verdict_time = 1700000350.5;
  u.recovery = api::RecoveryAction::kReplace;
  u.recovery_reason = "xid: Xid 79";
  u.recovery_stage = api::RecoveryStage::kTerminating;
  u.recovery_since = 1700000350.5;
  u.reboots = 2;
  u.replaces = "i-0123456789abcdef1";
  u.deep_check = {{"Id", "hc-1"}};
  u.deep_result = json::array({{{"Check", "cpu"}, {"Passed", true}}});
  ASSERT_TRUE(store_->update_instance(u).ok());
  got = store_->instance(i.instance_id);
  ASSERT_TRUE(got.has_value());
  expect_same_instance(*got, u);
  EXPECT_FALSE(store_->instance("i-ffffffffffffffff0").has_value());
}

TEST_F(StoreTest, InstancesListedByGroupThenSlotAndActiveOnlyFilters) {
  ClusterRow c = make_cluster("0123456789ab", "ml", 1);
  ClusterRow other = make_cluster("ba9876543210", "other", 2);
  ASSERT_TRUE(store_->insert_cluster(c).ok());
  ASSERT_TRUE(store_->insert_cluster(other).ok());
  ASSERT_TRUE(store_->insert_instance(make_instance("i-3", c.id, "worker", 1)).ok());
  ASSERT_TRUE(store_->insert_instance(make_instance("i-1", c.id, "worker", 0)).ok());
  InstanceRow gone = make_instance("i-2", c.id, "controller", 0);
  gone.terminated_at = 1700000500;
  ASSERT_TRUE(store_->insert_instance(gone).ok());
  ASSERT_TRUE(store_->insert_instance(make_instance("i-4", other.id, "worker", 0)).ok());

  std::vector<std::string> ids;
  for (const auto& r : store_->instances(c.id, false)) ids.push_back(r.instance_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"i-2", "i-1", "i-3"}));
  ids.clear();
  for (const auto& r : store_->instances(c.id, true)) ids.push_back(r.instance_id);
  EXPECT_EQ(ids, (std::vector<std::string>{"i-1", "i-3"}));
}

TEST_F(StoreTest, ClusterByNameIgnoresDeletedAndLiveNameIsUnique) {
  ClusterRow first = make_cluster("aaaaaaaaaaaa", "ml", 1, "InService");
  ASSERT_TRUE(store_->insert_cluster(first).ok());

  ClusterRow second = make_cluster("bbbbbbbbbbbb", "ml", 2, "Creating");
  Status dup = store_->insert_cluster(second);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, "StoreError");
  EXPECT_FALSE(store_->cluster_by_id(second.id).has_value());

  first.status = api::ClusterStatus::kDeleted;
  ASSERT_TRUE(store_->update_cluster(first).ok());
  EXPECT_FALSE(store_->cluster_by_name("ml").has_value());
  EXPECT_TRUE(store_->cluster_by_id(first.id).has_value());  // still there by id

  ASSERT_TRUE(store_->insert_cluster(second).ok());
  auto live = store_->cluster_by_name("ml");
  ASSERT_TRUE(live.has_value());
  EXPECT_EQ(live->id, second.id);

  EXPECT_EQ(store_->clusters(false).size(), 1u);
  EXPECT_EQ(store_->clusters(true).size(), 2u);

  // A third live one with the same name is refused again.
  EXPECT_FALSE(store_->insert_cluster(make_cluster("cccccccccccc", "ml", 3)).ok());
}

// Indexes come from the provider (host-wide); the store refuses two live clusters on one.
TEST_F(StoreTest, LiveClusterIndexIsUniqueAndADeletedOneIsFreed) {
  ASSERT_TRUE(store_->insert_cluster(make_cluster("aaaaaaaaaaa1", "c1", 1)).ok());
  EXPECT_FALSE(store_->insert_cluster(make_cluster("aaaaaaaaaaa2", "c2", 1)).ok());
  ASSERT_TRUE(store_
                  ->mutate_cluster("aaaaaaaaaaa1",
                                   [](ClusterRow& r) -> Status {
                                     r.status = api::ClusterStatus::kDeleted;
                                     return {};
                                   })
                  .ok());
  EXPECT_TRUE(store_->insert_cluster(make_cluster("aaaaaaaaaaa2", "c2", 1)).ok());
}

TEST_F(StoreTest, OnlyOneLiveInstancePerSlot) {
  ClusterRow c = make_cluster("0123456789ab", "ml", 1);
  ASSERT_TRUE(store_->insert_cluster(c).ok());
  InstanceRow first = make_instance("i-00000000000000001", c.id, "worker", 0);
  ASSERT_TRUE(store_->insert_instance(first).ok());

  InstanceRow second = make_instance("i-00000000000000002", c.id, "worker", 0);
  Status dup = store_->insert_instance(second);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, "StoreError");
  EXPECT_FALSE(store_->instance(second.instance_id).has_value());

  // Other slots and other groups are independent.
  EXPECT_TRUE(
      store_->insert_instance(make_instance("i-00000000000000003", c.id, "worker", 1)).ok());
  EXPECT_TRUE(store_->insert_instance(make_instance("i-00000000000000004", c.id, "login", 0)).ok());

  first.terminated_at = 1700000999.5;
  ASSERT_TRUE(store_->update_instance(first).ok());
  ASSERT_TRUE(store_->insert_instance(second).ok());

  // The replacement is now the live one: a third is refused.
  EXPECT_FALSE(
      store_->insert_instance(make_instance("i-00000000000000005", c.id, "worker", 0)).ok());
  auto active = store_->instances(c.id, true);
  int live_in_slot = 0;
  for (const auto& r : active) {
    if (r.group == "worker" && r.slot == 0) {
      ++live_in_slot;
      EXPECT_EQ(r.instance_id, second.instance_id);
    }
  }
  EXPECT_EQ(live_in_slot, 1);
  EXPECT_EQ(store_->instances(c.id, false).size(), 4u);
}

TEST_F(StoreTest, TransactionErrorLeavesNothing) {
  ClusterRow c = make_cluster("0123456789ab", "ml", 1);
  Status s = store_->transaction([&]() -> Status {
    if (auto st = store_->insert_cluster(c); !st) return st;
    if (auto id = store_->append_event(make_event(c.id, "ClusterCreating")); !id) return id.error();
    return make_error("Boom", "abort after both writes");
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "Boom");
  EXPECT_TRUE(store_->clusters(true).empty());
  EXPECT_FALSE(store_->cluster_by_id(c.id).has_value());
  EXPECT_TRUE(store_->events(c.id).empty());

  // Still nothing after a restart: the rollback reached the file.
  reopen();
  EXPECT_TRUE(store_->clusters(true).empty());
  EXPECT_TRUE(store_->events(c.id).empty());
}

TEST_F(StoreTest, TransactionCommitKeepsEverything) {
  ClusterRow c = make_cluster("0123456789ab", "ml", 1);
  Status s = store_->transaction([&]() -> Status {
    if (auto st = store_->insert_cluster(c); !st) return st;
    if (auto id = store_->append_event(make_event(c.id, "ClusterCreating")); !id) return id.error();
    return {};
  });
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(store_->clusters(true).size(), 1u);
  EXPECT_EQ(store_->events(c.id).size(), 1u);

  reopen();
  EXPECT_EQ(store_->clusters(true).size(), 1u);
  EXPECT_EQ(store_->events(c.id).size(), 1u);

  // The store is usable for a next transaction after both outcomes.
  EXPECT_TRUE(store_->transaction([]() -> Status { return {}; }).ok());
}

TEST_F(StoreTest, FailedStatementInsideTransactionRollsBackEarlierWrites) {
  ClusterRow c = make_cluster("0123456789ab", "ml", 1);
  ASSERT_TRUE(store_->insert_cluster(c).ok());
  InstanceRow i = make_instance("i-00000000000000001", c.id, "worker", 0);
  Status s = store_->transaction([&]() -> Status {
    if (auto st = store_->insert_instance(i); !st) return st;
    // Same slot again: the unique index refuses it and fn passes the error on.
    return store_->insert_instance(make_instance("i-00000000000000002", c.id, "worker", 0));
  });
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(store_->instances(c.id, false).empty());
}

TEST_F(StoreTest, NestedTransactionJoinsTheOuterOne) {
  ClusterRow c = make_cluster("0123456789ab", "ml", 1);
  Status s = store_->transaction([&]() -> Status {
    if (auto st = store_->insert_cluster(c); !st) return st;
    Status inner = store_->transaction([&]() -> Status {
      if (auto id = store_->append_event(make_event(c.id, "Inner")); !id) return id.error();
      return {};
    });
    if (!inner) return inner;
    // The inner one returned ok, but nothing is committed until the outer one is.
    return make_error("Boom", "outer aborts");
  });
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(store_->clusters(true).empty());
  EXPECT_TRUE(store_->events(c.id).empty());

  s = store_->transaction([&]() -> Status {
    if (auto st = store_->insert_cluster(c); !st) return st;
    return store_->transaction([&]() -> Status {
      if (auto id = store_->append_event(make_event(c.id, "Inner")); !id) return id.error();
      return {};
    });
  });
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(store_->clusters(true).size(), 1u);
  EXPECT_EQ(store_->events(c.id).size(), 1u);
}

TEST_F(StoreTest, MutateInstanceChangesFieldsAndKeepsOthers) {
  ClusterRow c = make_cluster("0123456789ab", "ml", 1);
  ASSERT_TRUE(store_->insert_cluster(c).ok());
  InstanceRow i = make_instance("i-00000000000000001", c.id, "worker", 0);
  i.message = "keep me";
  ASSERT_TRUE(store_->insert_instance(i).ok());

  Status s = store_->mutate_instance(i.instance_id, [](InstanceRow& r) -> Status {
    r.status = api::NodeStatus::kRunning;
    r.pid = 1234;
    return {};
  });
  ASSERT_TRUE(s.ok()) << s.error().message;
  InstanceRow want = i;
  want.status = api::NodeStatus::kRunning;
  want.pid = 1234;
  auto got = store_->instance(i.instance_id);
  ASSERT_TRUE(got.has_value());
  expect_same_instance(*got, want);
}

TEST_F(StoreTest, MutateInstanceUnknownIdIsResourceNotFound) {
  bool called = false;
  Status s = store_->mutate_instance("i-fffffffffffffffff", [&](InstanceRow&) -> Status {
    called = true;
    return {};
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "ResourceNotFound");
  EXPECT_FALSE(called);
}

TEST_F(StoreTest, MutateInstanceErrorFromFnChangesNothing) {
  ClusterRow c = make_cluster("0123456789ab", "ml", 1);
  ASSERT_TRUE(store_->insert_cluster(c).ok());
  InstanceRow i = make_instance("i-00000000000000001", c.id, "worker", 0);
  ASSERT_TRUE(store_->insert_instance(i).ok());
  Status s = store_->mutate_instance(i.instance_id, [](InstanceRow& r) -> Status {
    r.status = api::NodeStatus::kFailure;
    r.pid = 99;
    return make_error("Nope", "changed my mind");
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "Nope");
  auto got = store_->instance(i.instance_id);
  ASSERT_TRUE(got.has_value());
  expect_same_instance(*got, i);
}

TEST_F(StoreTest, MutateClusterChangesFieldsUnknownIdAndFnError) {
  ClusterRow c = make_cluster("0123456789ab", "ml", 1);
  ASSERT_TRUE(store_->insert_cluster(c).ok());

  Status s = store_->mutate_cluster(c.id, [](ClusterRow& r) -> Status {
    r.status = api::ClusterStatus::kInService;
    r.applied_conf_hash = "00000000deadbeef";
    return {};
  });
  ASSERT_TRUE(s.ok()) << s.error().message;
  ClusterRow want = c;
  want.status = api::ClusterStatus::kInService;
  want.applied_conf_hash = "00000000deadbeef";
  auto got = store_->cluster_by_id(c.id);
  ASSERT_TRUE(got.has_value());
  expect_same_cluster(*got, want);

  s = store_->mutate_cluster("ffffffffffff", [](ClusterRow&) -> Status { return {}; });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "ResourceNotFound");

  s = store_->mutate_cluster(c.id, [](ClusterRow& r) -> Status {
    r.status = api::ClusterStatus::kFailed;
    r.failure_message = "should not stick";
    return make_error("Nope", "abort");
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "Nope");
  got = store_->cluster_by_id(c.id);
  ASSERT_TRUE(got.has_value());
  expect_same_cluster(*got, want);
}

TEST_F(StoreTest, ConcurrentMutationsOfDifferentFieldsDoNotUndoEachOther) {
  ClusterRow c = make_cluster("0123456789ab", "ml", 1);
  ASSERT_TRUE(store_->insert_cluster(c).ok());
  InstanceRow i = make_instance("i-00000000000000001", c.id, "worker", 0);
  i.pid = 0;
  i.lifecycle_exit = 0;
  ASSERT_TRUE(store_->insert_instance(i).ok());

  constexpr int kRounds = 100;
  std::thread a([&] {
    for (int n = 0; n < kRounds; ++n) {
      EXPECT_TRUE(store_
                      ->mutate_instance(i.instance_id,
                                        [](InstanceRow& r) -> Status {
                                          ++r.pid;
                                          return {};
                                        })
                      .ok());
    }
  });
  std::thread b([&] {
    for (int n = 0; n < kRounds; ++n) {
      EXPECT_TRUE(store_
                      ->mutate_instance(i.instance_id,
                                        [](InstanceRow& r) -> Status {
                                          ++r.lifecycle_exit;
                                          return {};
                                        })
                      .ok());
    }
  });
  a.join();
  b.join();
  auto got = store_->instance(i.instance_id);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->pid, kRounds);
  EXPECT_EQ(got->lifecycle_exit, kRounds);
}

TEST_F(StoreTest, AppendEventReturnsIncreasingIdsAndFillsTime) {
  double before = ids::now_seconds();
  std::vector<long long> event_ids;
  for (int n = 0; n < 5; ++n) {
    auto id = store_->append_event(make_event("c1", "E" + std::to_string(n)));
    ASSERT_TRUE(id.ok()) << id.error().message;
    event_ids.push_back(*id);
  }
  double after = ids::now_seconds();
  for (size_t n = 1; n < event_ids.size(); ++n) EXPECT_GT(event_ids[n], event_ids[n - 1]);

  EventRow timed = make_event("c1", "Timed");
  timed.time = 1234567890.5;
  auto timed_id = store_->append_event(timed);
  ASSERT_TRUE(timed_id.ok());
  EXPECT_GT(*timed_id, event_ids.back());

  auto events = store_->events("c1");
  ASSERT_EQ(events.size(), 6u);
  for (size_t n = 0; n < 5; ++n) {
    EXPECT_EQ(events[n].id, event_ids[n]);
    EXPECT_GE(events[n].time, before);  // filled in at the append
    EXPECT_LE(events[n].time, after);
  }
  EXPECT_DOUBLE_EQ(events[5].time, 1234567890.5);
}

TEST_F(StoreTest, EventsRoundTripAndFilterByAfterIdLimitAndNode) {
  std::vector<EventRow> a_events;
  for (int n = 0; n < 6; ++n) {
    EventRow e =
        make_event("cluster-a", "Type" + std::to_string(n), n % 2 == 0 ? "worker-0" : "worker-1");
    e.group = "worker";
    e.instance_id = "i-" + std::to_string(n);
    e.time = 1700000000.0 + n;
    auto id = store_->append_event(e);
    ASSERT_TRUE(id.ok());
    e.id = *id;
    a_events.push_back(e);
    // Another cluster's events interleave.
    ASSERT_TRUE(store_->append_event(make_event("cluster-b", "Other", "worker-0")).ok());
  }

  auto all = store_->events("cluster-a");
  ASSERT_EQ(all.size(), 6u);
  for (size_t n = 0; n < all.size(); ++n) expect_same_event(all[n], a_events[n]);

  auto after = store_->events("cluster-a", a_events[2].id);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].id, a_events[3].id);
  EXPECT_EQ(after[2].id, a_events[5].id);

  auto limited = store_->events("cluster-a", 0, 2);
  ASSERT_EQ(limited.size(), 2u);
  EXPECT_EQ(limited[0].id, a_events[0].id);
  EXPECT_EQ(limited[1].id, a_events[1].id);

  auto page = store_->events("cluster-a", a_events[1].id, 2);
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0].id, a_events[2].id);
  EXPECT_EQ(page[1].id, a_events[3].id);

  auto node = store_->events("cluster-a", 0, 1000, "worker-1");
  ASSERT_EQ(node.size(), 3u);
  for (size_t n = 0; n < node.size(); ++n) {
    EXPECT_EQ(node[n].node_name, "worker-1");
    EXPECT_EQ(node[n].id, a_events[2 * n + 1].id);
  }
  auto node_after = store_->events("cluster-a", a_events[1].id, 1, "worker-1");
  ASSERT_EQ(node_after.size(), 1u);
  EXPECT_EQ(node_after[0].id, a_events[3].id);

  EXPECT_EQ(store_->events("cluster-b").size(), 6u);
  EXPECT_TRUE(store_->events("cluster-c").empty());
  EXPECT_TRUE(store_->events("cluster-a", a_events[5].id).empty());
}

TEST_F(StoreTest, EventsAreAppendOnlyEvenThroughRawSqlite) {
  auto id = store_->append_event(make_event("c1", "ClusterCreating"));
  ASSERT_TRUE(id.ok());

  std::string message;
  int rc = raw_exec(db_path_, "UPDATE events SET type='Forged' WHERE id=" + std::to_string(*id),
                    &message);
  EXPECT_NE(rc, SQLITE_OK);
  EXPECT_NE(message.find("append-only"), std::string::npos) << message;

  rc = raw_exec(db_path_, "DELETE FROM events", &message);
  EXPECT_NE(rc, SQLITE_OK);
  EXPECT_NE(message.find("append-only"), std::string::npos) << message;

  auto events = store_->events("c1");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "ClusterCreating");

  // The triggers are part of the file, so they hold after a reopen too.
  reopen();
  EXPECT_NE(raw_exec(db_path_, "DELETE FROM events"), SQLITE_OK);
  EXPECT_EQ(store_->events("c1").size(), 1u);
}

TEST_F(StoreTest, ConcurrentAppendsGetDistinctIds) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  std::vector<std::vector<long long>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < kPerThread; ++n) {
        auto id = store_->append_event(
            make_event("c1", "T" + std::to_string(t) + "-" + std::to_string(n)));
        EXPECT_TRUE(id.ok());
        if (id.ok()) got[t].push_back(*id);
      }
    });
  }
  for (auto& th : threads) th.join();

  std::set<long long> distinct;
  for (const auto& ids_of_thread : got) {
    EXPECT_EQ(ids_of_thread.size(), static_cast<size_t>(kPerThread));
    // Each thread sees its own ids increase.
    EXPECT_TRUE(std::is_sorted(ids_of_thread.begin(), ids_of_thread.end()));
    distinct.insert(ids_of_thread.begin(), ids_of_thread.end());
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kThreads * kPerThread));

  auto events = store_->events("c1", 0, 10000);
  ASSERT_EQ(events.size(), static_cast<size_t>(kThreads * kPerThread));
  std::set<long long> stored;
  std::set<std::string> types;
  for (const auto& e : events) {
    stored.insert(e.id);
    types.insert(e.type);
  }
  EXPECT_EQ(stored, distinct);
  EXPECT_EQ(types.size(), static_cast<size_t>(kThreads * kPerThread));
}

}  // namespace
}  // namespace endure::store
