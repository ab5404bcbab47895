#include "store/statement.h"

#include <map>
#include <mutex>
#include <vector>

namespace endure::store::detail {
namespace {

// Idle statements by connection and SQL text. Its own lock: a store's lock guards its
// connection, but tests open several stores at once.
struct Cache {
  std::mutex mu;
  std::map<sqlite3*, std::map<std::string, std::vector<sqlite3_stmt*>, std::less<>>> idle;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: stores may close during static teardown
  return *c;
}

}  // namespace

sqlite3_stmt* take_statement(sqlite3* db, std::string_view sql) {
  {
    Cache& c = cache();
    std::lock_guard lock(c.mu);
    auto& of_db = c.idle[db];
    if (auto it = of_db.find(sql); it != of_db.end() && !it->second.empty()) {
      sqlite3_stmt* stmt = it->second.back();
      it->second.pop_back();
      return stmt;
    }
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                         &stmt, nullptr) != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return nullptr;
  }
  return stmt;
}

void give_back_statement(sqlite3* db, sqlite3_stmt* stmt) {
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  auto& of_db = c.idle[db];
  // Found by view: a heartbeat's lookup gives its statement back without a string made.
  const std::string_view sql = sqlite3_sql(stmt);
  auto it = of_db.find(sql);
  if (it == of_db.end()) it = of_db.emplace(std::string(sql), std::vector<sqlite3_stmt*>()).first;
  it->second.push_back(stmt);
}

void forget_statements(sqlite3* db) {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  auto it = c.idle.find(db);
  if (it == c.idle.end()) return;
  for (auto& [sql, stmts] : it->second) {
    for (sqlite3_stmt* stmt : stmts) sqlite3_finalize(stmt);
  }
  c.idle.erase(it);
}

}  // namespace endure::store::detail
