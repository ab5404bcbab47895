// The store's one way to run SQL: a prepared statement with positional binds, taken from
// the connection's cache and given back on scope exit. Shared by the store's files; not
// part of its interface.
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>

#include "common/result.h"

namespace endure::store::detail {

inline Error db_error(sqlite3* db, const std::string& what) {
  return make_error("StoreError", what + ": " + sqlite3_errmsg(db));
}

// The tables of host_store.cpp and training_store.cpp, made by Store::open with its own.
extern const char* const kHostSchema;
extern const char* const kTrainingSchema;

// A prepared statement of db for sql: one the cache holds idle, else a new one. Compiling
// SQL costs more than running the small queries endured makes thousands of times a second
// (a heartbeat's lookup); a statement in use is never handed out twice (nested queries).
sqlite3_stmt* take_statement(sqlite3* db, std::string_view sql);
// Gives a statement back, reset and unbound, for the next use of its SQL.
void give_back_statement(sqlite3* db, sqlite3_stmt* stmt);
// Finalizes every cached statement of db: before it is closed.
void forget_statements(sqlite3* db);

// A prepared statement with positional binds, given back to the cache on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db), stmt_(take_statement(db, sql)) {}
  ~Stmt() {
    if (stmt_) give_back_statement(db_, stmt_);
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return stmt_ != nullptr; }

  Stmt& bind(const std::string& v) {
    sqlite3_bind_text(stmt_, ++n_, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(const char* v) { return bind(std::string(v)); }
  Stmt& bind(long long v) {
    sqlite3_bind_int64(stmt_, ++n_, v);
    return *this;
  }
  Stmt& bind(int v) { return bind(static_cast<long long>(v)); }
  Stmt& bind(double v) {
    sqlite3_bind_double(stmt_, ++n_, v);
    return *this;
  }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return stmt_ ? sqlite3_step(stmt_) : SQLITE_ERROR; }
  Status run(const std::string& what) {
    int rc = step();
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return db_error(db_, what);
    return {};
  }

  std::string text(int col) const {
    auto p = sqlite3_column_text(stmt_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  long long i64(int col) const { return sqlite3_column_int64(stmt_, col); }
  int i32(int col) const { return sqlite3_column_int(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int n_ = 0;
};

}  // namespace endure::store::detail
