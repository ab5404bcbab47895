// endure-s3-give-up-bench: how long the S3 client and the checkpoint engine's S3 tier take
// to give up, or to move on, when the store fails them; the timings the S3 tests once
// asserted, measured here instead (bench/s3/run.sh prints them beside their references).
//
//   endure-s3-give-up-bench [ROUNDS]     (default 3)
//
// Against s3rver (tools/s3rver, as the S3 tests start it: tests/support/s3_server.h), on
// loopback, started, killed and restarted by its pid. Writes one JSON object a line to
// stdout, each {"what", "seconds": [one a round], "reference_s", "reference"}:
//   unreachable        a GET to a closed port, 4 attempts 50-100 ms apart, until it fails;
//                      reference: the retry schedule's longest sleep (backoff_delay's caps)
//   server_errors      a GET the server answers 500 (its metadata damaged), 3 attempts
//                      20-200 ms apart, until it fails; reference: the same
//   upload_killed      a 40 MiB multipart upload whose server is killed as its first part
//                      is stored, from the kill to the failure; reference: the same
//   ckpt_wait_killed   the checkpoint engine's wait() on a 40 MiB step whose server is
//                      killed as its first part is stored, from the kill to wait()'s error;
//                      reference: the default retry schedule, which the tier's client has
//   rank0_moves_on     rank 0's wait() on step 2 when rank 1 skipped step 1 (it gives step
//                      1 up on seeing rank 1's step 2); reference: rank 0's wait() for the
//                      same step when no rank skipped one, in the same round
// Progress and errors go to stderr; exit 1 when a measurement could not be made.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "common/json.h"
#include "endure/checkpoint.h"
#include "s3/retry_policy.h"
#include "s3/s3_client.h"
#include "support/loopback_port.h"
#include "support/s3_server.h"
#include "support/temp_dir.h"

namespace endure::bench {
namespace {

namespace sfs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kBucket = "endure-give-up";

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The longest a policy sleeps before it gives up: every retry's cap, summed.
double schedule_max_s(const s3::RetryPolicy& p) {
  double total = 0;
  for (int r = 0; r + 1 < p.max_attempts; ++r) {
    total += std::chrono::duration<double>(s3::backoff_delay(p, r, 0.999999)).count();
  }
  return total;
}

std::string noise(size_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(size, '\0');
  for (size_t i = 0; i + 8 <= size; i += 8) {
    const uint64_t v = rng();
    std::memcpy(out.data() + i, &v, 8);
  }
  return out;
}

void emit(const std::string& what, const std::vector<double>& seconds, double reference_s,
          const std::string& reference) {
  std::printf("%s\n", json{{"what", what},
                           {"seconds", seconds},
                           {"reference_s", reference_s},
                           {"reference", reference}}
                          .dump()
                          .c_str());
  std::fflush(stdout);
}

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "give_up_bench: %s\n", why.c_str());
  std::exit(1);
}

std::unique_ptr<s3::S3Client> client_for(const s3::S3Config& config) {
  auto c = s3::S3Client::create(config);
  if (!c) fail(c.error().message);
  return std::move(*c);
}

// The parts the server holds of uploads not completed (s3rver keeps one as
// BUCKET/._S3rver_uploads/ID/N, with N.md5 beside it); a killed upload leaves its own.
std::set<sfs::path> stored_parts(const test::S3Server& server) {
  std::set<sfs::path> out;
  std::error_code ec;
  for (auto it = sfs::recursive_directory_iterator(server.data_dir(), ec);
       !ec && it != sfs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".md5" &&
        it->path().string().find("_S3rver_uploads") != std::string::npos) {
      out.insert(it->path());
    }
  }
  return out;
}

// Kills `server` once an upload has stored a part not among `before`; the time of the kill
// (none when `done` came first).
Clock::time_point kill_at_first_part(test::S3Server& server, const std::set<sfs::path>& before,
                                     const std::atomic<bool>& done) {
  for (;;) {
    for (const auto& part : stored_parts(server)) {
      if (!before.count(part)) {
        server.kill();
        return Clock::now();
      }
    }
    if (done) return Clock::time_point{};
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// A port on loopback where nothing listens.
int closed_port() {
  int port = test::unused_loopback_port();
  if (port == 0) fail("no loopback port");
  return port;
}

double unreachable() {
  s3::S3Config config;
  config.endpoint_url = "http://127.0.0.1:" + std::to_string(closed_port());
  config.path_style = true;
  config.credentials = {"AKID", "SECRET", ""};
  config.retry.max_attempts = 4;
  config.retry.base_delay = std::chrono::milliseconds(50);
  config.retry.max_delay = std::chrono::milliseconds(100);
  auto client = client_for(config);
  const auto t0 = Clock::now();
  auto got = client->get_object("bucket", "key");
  const double took = seconds_since(t0);
  if (got) fail("a GET to a closed port succeeded");
  return took;
}

double server_errors(test::S3Server& server) {
  auto client = client_for(server.config());
  if (Status put = client->put_object(kBucket, "flaky", "bytes"); !put) fail(put.error().message);
  const auto metadata = server.data_dir() / kBucket / "flaky._S3rver_metadata.json";
  if (Status bad = fs::atomic_write_file(metadata, "{damaged"); !bad) fail(bad.error().message);
  const auto t0 = Clock::now();
  auto got = client->get_object(kBucket, "flaky");
  const double took = seconds_since(t0);
  if (got || got.error().code != "InternalError") fail("the damaged object did not answer 500");
  return took;
}

double upload_killed(test::S3Server& server, const std::string& data, int round) {
  s3::S3Config config = server.config();
  config.part_size = 5ull << 20;
  config.multipart_threshold = 5ull << 20;
  config.parallelism = 2;
  auto client = client_for(config);
  const auto before = stored_parts(server);
  std::atomic<bool> done{false};
  Clock::time_point killed;
  std::thread killer([&] { killed = kill_at_first_part(server, before, done); });
  Status up = client->upload(kBucket, fmt::format("killed/{}", round), data);
  const auto failed = Clock::now();
  done = true;
  killer.join();
  if (Status back = server.start(); !back) fail(back.error().message);
  if (up) fail("the upload succeeded with its server killed");
  if (killed == Clock::time_point{}) fail("the upload stored no part before it ended");
  return std::chrono::duration<double>(failed - killed).count();
}

ckpt::Options tier_options(const sfs::path& dir, const std::string& prefix) {
  ckpt::Options o;
  o.dir = dir / prefix;
  o.s3 = std::string("s3://") + kBucket + "/" + prefix;
  o.keep_last = 0;
  return o;
}

void save(ckpt::Checkpointer& c, int64_t step, const std::string& bytes) {
  Status s = c.save(step, {{"state", bytes.data(), bytes.size()}}, {{"step", step}});
  if (!s) fail(s.error().message);
}

double ckpt_wait_killed(test::S3Server& server, const sfs::path& dir, const std::string& data,
                        int round) {
  auto c = ckpt::Checkpointer::open(tier_options(dir, fmt::format("ckpt-killed-{}", round)));
  if (!c) fail(c.error().message);
  const auto before = stored_parts(server);
  std::atomic<bool> done{false};
  Clock::time_point killed;
  std::thread killer([&] { killed = kill_at_first_part(server, before, done); });
  save(**c, 1, data);
  Status waited = (*c)->wait();
  const auto failed = Clock::now();
  done = true;
  killer.join();
  if (Status back = server.start(); !back) fail(back.error().message);
  if (waited) fail("the step went up with its server killed");
  if (killed == Clock::time_point{}) fail("the step's upload stored no part before it ended");
  return std::chrono::duration<double>(failed - killed).count();
}

// Rank 0's wait() for step 2 of two ranks sharing a prefix: with rank 1 having skipped
// step 1 (`skipped`), or having uploaded both.
double rank0_wait(const sfs::path& dir, const std::string& prefix, bool skipped,
                  const std::string& data) {
  ckpt::Options o0 = tier_options(dir, prefix);
  o0.world = 2;
  o0.commit_timeout_seconds = 120;
  ckpt::Options o1 = o0;
  o1.rank = 1;
  ckpt::Options o1_step1 = o1;
  if (skipped) o1_step1.s3.clear();  // its step 1 on disk only, as a superseded upload leaves it
  {
    auto r1 = ckpt::Checkpointer::open(o1_step1);
    if (!r1) fail(r1.error().message);
    save(**r1, 1, data);
    if (Status s = (*r1)->wait(); !s) fail(s.error().message);
  }
  auto r0 = ckpt::Checkpointer::open(o0);
  if (!r0) fail(r0.error().message);
  save(**r0, 1, data);
  {
    auto r1 = ckpt::Checkpointer::open(o1);
    if (!r1) fail(r1.error().message);
    save(**r1, 2, data);
    if (Status s = (*r1)->wait(); !s) fail(s.error().message);
  }
  save(**r0, 2, data);
  const auto t0 = Clock::now();
  Status s = (*r0)->wait();
  const double took = seconds_since(t0);
  if (!s) fail(s.error().message);
  return took;
}

int run(int rounds) {
  if (auto why = test::S3Server::unavailable_reason(); !why.empty()) fail(why);
  test::S3Server server({kBucket});
  if (Status up = server.start(); !up) fail(up.error().message);
  test::TempDir dir("endure-s3-give-up");
  const std::string big = noise(40u << 20, 1), small = noise(300u << 10, 2);
  // The checkpoint engine takes the store's address and keys from the AWS environment.
  ::setenv("AWS_ENDPOINT_URL", server.endpoint_url().c_str(), 1);
  ::setenv("AWS_ACCESS_KEY_ID", test::S3Server::kAccessKey, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", test::S3Server::kSecretKey, 1);
  ::setenv("AWS_REGION", "us-east-1", 1);

  std::vector<double> a, b, c, d, moved, plain;
  for (int r = 0; r < rounds; ++r) {
    std::fprintf(stderr, "give_up_bench: round %d of %d\n", r + 1, rounds);
    a.push_back(unreachable());
    b.push_back(server_errors(server));
    c.push_back(upload_killed(server, big, r));
    d.push_back(ckpt_wait_killed(server, dir.path(), big, r));
    moved.push_back(rank0_wait(dir.path(), fmt::format("skipped-{}", r), true, small));
    plain.push_back(rank0_wait(dir.path(), fmt::format("whole-{}", r), false, small));
  }
  s3::RetryPolicy unreachable_policy{4, std::chrono::milliseconds(50),
                                     std::chrono::milliseconds(100)};
  const double test_schedule = schedule_max_s(server.config().retry);
  emit("unreachable", a, schedule_max_s(unreachable_policy),
       "the retry schedule's longest sleep (4 attempts, 50-100 ms)");
  emit("server_errors", b, test_schedule, "the retry schedule's longest sleep (3 attempts)");
  emit("upload_killed", c, test_schedule, "the retry schedule's longest sleep (3 attempts)");
  // The engine's tier takes its client from the AWS environment: the default schedule.
  emit("ckpt_wait_killed", d, schedule_max_s(s3::RetryPolicy{}),
       "the default retry schedule's longest sleep (5 attempts, 0.1-5 s), the tier's");
  std::sort(plain.begin(), plain.end());
  emit("rank0_moves_on", moved, plain[plain.size() / 2],
       "rank 0's wait() for the same step with no step skipped (median)");
  return 0;
}

}  // namespace
}  // namespace endure::bench

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  if (rounds < 1) {
    std::fprintf(stderr, "usage: endure-s3-give-up-bench [ROUNDS]\n");
    return 2;
  }
  return endure::bench::run(rounds);
}
