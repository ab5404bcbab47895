// The training_records table: endure-train's lines as its rank 0 reported them.
#include <algorithm>

#include "store/statement.h"
#include "store/store.h"

namespace endure::store {

const char* const detail::kTrainingSchema = R"sql(
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
)sql";

using detail::Stmt;

namespace {

// The kinds a trainer line can be; the first key of these it holds names it.
std::string kind_of(const json& r) {
  for (const char* k : {"start", "eval", "checkpoint", "done", "stopped"}) {
    if (r.contains(k)) return k;
  }
  if (r.contains("step") && r.contains("loss")) return "step";
  return "other";
}

long long step_of(const json& r, const std::string& kind) {
  const char* key = kind == "checkpoint"                  ? "checkpoint"
                    : kind == "done" || kind == "stopped" ? "final_step"
                                                          : "step";
  auto it = r.find(key);
  return it != r.end() && it->is_number_integer() ? it->get<long long>() : -1;
}

TrainingRecord read_record(const Stmt& s) {
  TrainingRecord r;
  r.job_id = s.i64(0);
  r.resume = s.i32(1);
  r.kind = s.text(2);
  r.step = s.i64(3);
  r.time = s.real(4);
  r.record = json::parse(s.text(5), nullptr, false);
  if (!r.record.is_object()) r.record = json::object();
  return r;
}

constexpr const char* kRecordCols = "job_id, resume, kind, step, time, record";

}  // namespace

Result<int> Store::put_training_records(const std::string& cluster_id, long long job_id,
                                        const json& records) {
  int added = 0;
  auto s = transaction([&]() -> Status {
    for (const auto& r : records) {
      const std::string kind = kind_of(r);
      const json resume = r.value("resume", json(0));
      Stmt st(db_,
              "INSERT OR IGNORE INTO training_records "
              "(cluster_id, job_id, resume, kind, step, time, record) VALUES (?,?,?,?,?,?,?)");
      st.bind(cluster_id)
          .bind(job_id)
          .bind(resume.is_number_integer() ? resume.get<int>() : 0)
          .bind(kind)
          .bind(step_of(r, kind))
          .bind(r["time"].get<double>())
          .bind(r.dump());
      if (auto ran = st.run("file a training record"); !ran) return ran;
      added += sqlite3_changes(db_);
    }
    return {};
  });
  if (!s) return s.error();
  return added;
}

std::vector<TrainingRun> Store::training_runs(const std::string& cluster_id) {
  std::lock_guard lock(mu_);
  std::vector<TrainingRun> runs;
  {
    Stmt s(db_,
           "SELECT job_id, MIN(time), MAX(time), MAX(resume) FROM training_records "
           "WHERE cluster_id = ? GROUP BY job_id ORDER BY job_id DESC");
    s.bind(cluster_id);
    while (s.step() == SQLITE_ROW) {
      TrainingRun run;
      run.job_id = s.i64(0);
      run.first_time = s.real(1);
      run.last_time = s.real(2);
      run.resumes = s.i32(3);
      runs.push_back(std::move(run));
    }
  }
  const std::string newest = std::string("SELECT ") + kRecordCols +
                             " FROM training_records WHERE cluster_id = ? AND job_id = ? AND "
                             "kind = ? ORDER BY time DESC LIMIT 1";
  for (auto& run : runs) {
    for (auto [kind, into] :
         {std::pair{"step", &run.last_step}, std::pair{"checkpoint", &run.last_checkpoint}}) {
      Stmt last(db_, newest.c_str());
      last.bind(cluster_id).bind(run.job_id).bind(kind);
      if (last.step() == SQLITE_ROW) *into = read_record(last);
    }
    // The newest line of the newest try: a done or stopped line ends the run.
    Stmt end(db_,
             "SELECT kind FROM training_records WHERE cluster_id = ? AND job_id = ? "
             "ORDER BY time DESC LIMIT 1");
    end.bind(cluster_id).bind(run.job_id);
    if (end.step() == SQLITE_ROW) {
      std::string kind = end.text(0);
      if (kind == "done" || kind == "stopped") run.end_kind = kind;
    }
  }
  return runs;
}

long long Store::training_steps(const std::string& cluster_id, long long job_id) {
  std::lock_guard lock(mu_);
  Stmt s(db_,
         "SELECT COUNT(DISTINCT step) FROM training_records WHERE cluster_id = ? AND job_id = ? "
         "AND kind = 'step'");
  s.bind(cluster_id).bind(job_id);
  return s.step() == SQLITE_ROW ? s.i64(0) : 0;
}

std::vector<TrainingRecord> Store::training_records(const std::string& cluster_id, long long job_id,
                                                    const std::string& kind, long long stride) {
  std::lock_guard lock(mu_);
  std::string sql = std::string("SELECT ") + kRecordCols +
                    " FROM training_records WHERE cluster_id = ? AND job_id = ? AND kind = ?";
  if (kind == "step") {
    // SQLite takes the other columns from the row of the MAX(time): the try that reached
    // the step last. Its bare-column rule is documented for MIN/MAX aggregates.
    sql =
        "SELECT job_id, resume, kind, step, MAX(time), record FROM training_records "
        "WHERE cluster_id = ? AND job_id = ? AND kind = ? AND step % ? = 0 "
        "GROUP BY step ORDER BY step";
  } else {
    sql += " ORDER BY time";
  }
  Stmt s(db_, sql.c_str());
  s.bind(cluster_id).bind(job_id).bind(kind);
  if (kind == "step") s.bind(std::max<long long>(stride, 1));
  std::vector<TrainingRecord> out;
  while (s.step() == SQLITE_ROW) out.push_back(read_record(s));
  return out;
}

}  // namespace endure::store
