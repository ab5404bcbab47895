// The hosts table: the registered hosts and what endure does with them.
#include "common/ids.h"
#include "store/columns.h"
#include "store/statement.h"
#include "store/store.h"

namespace endure::store {

const char* const detail::kHostSchema = R"sql(
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
)sql";

using detail::column;
using detail::Columns;
using detail::json_column;
using detail::Stmt;

namespace {

const Columns<HostRow>& host_columns() {
  using R = HostRow;
  static const Columns<R> columns{
      column("name", &R::name),
      column("pool", &R::pool),
      column("position", &R::position),
      json_column(
          "registration", &R::registration, [](const json& j) { return j.is_object(); },
          json::object()),
      column("state", &R::state),
      column("cluster_id", &R::cluster_id),
      column("instance_id", &R::instance_id),
      column("reason", &R::reason),
      column("updated_at", &R::updated_at),
  };
  return columns;
}

Status write_host(sqlite3* db, HostRow r) {
  if (r.updated_at <= 0) r.updated_at = ids::now_seconds();
  Stmt s(db, host_columns().insert("hosts", "INSERT OR REPLACE").c_str());
  host_columns().bind_all(s, r);
  return s.run("write host " + r.name);
}

}  // namespace

std::vector<HostRow> Store::hosts() {
  std::lock_guard lock(mu_);
  Stmt s(db_, ("SELECT " + host_columns().names() + " FROM hosts ORDER BY pool, position").c_str());
  std::vector<HostRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(host_columns().read(s));
  return out;
}

Status Store::replace_hosts(const std::vector<HostRow>& rows) {
  return transaction([&]() -> Status {
    if (auto s = exec("DELETE FROM hosts;"); !s) return s;
    for (const auto& r : rows) {
      if (auto s = write_host(db_, r); !s) return s;
    }
    return {};
  });
}

Status Store::mutate_host(const std::string& name, const std::function<Status(HostRow&)>& fn) {
  return transaction([&]() -> Status {
    std::optional<HostRow> row;
    {
      Stmt s(db_, ("SELECT " + host_columns().names() + " FROM hosts WHERE name=?").c_str());
      s.bind(name);
      if (s.step() == SQLITE_ROW) row = host_columns().read(s);
    }
    if (!row) return make_error("ResourceNotFound", "host " + name + " is not registered");
    if (auto s = fn(*row); !s) return s;
    row->updated_at = ids::now_seconds();
    return write_host(db_, *row);
  });
}

}  // namespace endure::store
