// The hosts table: the registered hosts and what endure does with them.
#include "common/ids.h"
#include "store/statement.h"
#include "store/store.h"

namespace endure::store {

using detail::Stmt;

namespace {

constexpr const char* kHostCols =
    "name, pool, position, registration, state, cluster_id, instance_id, reason, updated_at";

HostRow read_host(const Stmt& s) {
  HostRow r;
  r.name = s.text(0);
  r.pool = s.text(1);
  r.position = s.i32(2);
  r.registration = json::parse(s.text(3), nullptr, false);
  if (!r.registration.is_object()) r.registration = json::object();
  r.state = s.text(4);
  r.cluster_id = s.text(5);
  r.instance_id = s.text(6);
  r.reason = s.text(7);
  r.updated_at = s.real(8);
  return r;
}

Status write_host(sqlite3* db, const HostRow& r) {
  Stmt s(db, (std::string("INSERT OR REPLACE INTO hosts (") + kHostCols +
              ") VALUES (?,?,?,?,?,?,?,?,?)")
                 .c_str());
  s.bind(r.name)
      .bind(r.pool)
      .bind(r.position)
      .bind(r.registration.dump())
      .bind(r.state)
      .bind(r.cluster_id)
      .bind(r.instance_id)
      .bind(r.reason)
      .bind(r.updated_at > 0 ? r.updated_at : ids::now_seconds());
  return s.run("write host " + r.name);
}

}  // namespace

std::vector<HostRow> Store::hosts() {
  std::lock_guard lock(mu_);
  Stmt s(db_, (std::string("SELECT ") + kHostCols + " FROM hosts ORDER BY pool, position").c_str());
  std::vector<HostRow> out;
  while (s.step() == SQLITE_ROW) out.push_back(read_host(s));
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
      Stmt s(db_, (std::string("SELECT ") + kHostCols + " FROM hosts WHERE name=?").c_str());
      s.bind(name);
      if (s.step() == SQLITE_ROW) row = read_host(s);
    }
    if (!row) return make_error("ResourceNotFound", "host " + name + " is not registered");
    if (auto s = fn(*row); !s) return s;
    row->updated_at = ids::now_seconds();
    return write_host(db_, *row);
  });
}

}  // namespace endure::store
