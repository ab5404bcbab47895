// The store's one way to run SQL: a prepared statement with positional binds, finalized on
// scope exit. Shared by the store's files; not part of its interface.
#pragma once

#include <sqlite3.h>

#include <string>

#include "common/result.h"

namespace endure::store::detail {

inline Error db_error(sqlite3* db, const std::string& what) {
  return make_error("StoreError", what + ": " + sqlite3_errmsg(db));
}

// A prepared statement with positional binds, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) stmt_ = nullptr;
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
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
