#include "s3/lifecycle_cache.h"

#include <system_error>

#include "common/fs.h"
#include "common/log.h"
#include "s3/http_transport.h"
#include "s3/prefix_fetch.h"
#include "s3/s3_error.h"

namespace endure::s3 {

namespace sfs = std::filesystem;

namespace {

constexpr const char* kSourcePrefix = "s3-";

bool is_hex(const std::string& s, size_t size) {
  return s.size() == size && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The newest snapshot of a source folder that holds on_create, or "".
sfs::path newest_snapshot(const sfs::path& source_dir, const std::string& on_create) {
  sfs::path best;
  sfs::file_time_type best_time{};
  std::error_code ec;
  for (const auto& entry : sfs::directory_iterator(source_dir, ec)) {
    if (!is_lifecycle_snapshot(entry.path())) continue;
    if (!sfs::is_regular_file(entry.path() / on_create, ec)) continue;
    auto t = sfs::last_write_time(entry.path(), ec);
    if (!ec && (best.empty() || t > best_time)) {
      best = entry.path();
      best_time = t;
    }
  }
  return best;
}

}  // namespace

LifecycleSourceCache::LifecycleSourceCache(sfs::path cache_root, ConfigOverrides overrides)
    : cache_root_(std::move(cache_root)), overrides_(std::move(overrides)) {}

LifecycleSourceCache::LifecycleSourceCache(sfs::path cache_root, S3Config config)
    : cache_root_(std::move(cache_root)), config_(std::move(config)) {}

Result<S3Client*> LifecycleSourceCache::client(const std::string& field) {
  std::lock_guard<std::mutex> lock(mu_);
  if (client_) return client_.get();
  Result<S3Config> config = config_ ? Result<S3Config>(*config_)
                                    : config_from_environment(current_environment(), overrides_);
  if (!config) {
    return make_error(config.error().code,
                      field + ".SourceS3Uri: object storage is not configured for endured: " +
                          config.error().message);
  }
  auto made = S3Client::create(*config);
  if (!made) {
    return make_error(made.error().code, field + ".SourceS3Uri: " + made.error().message);
  }
  client_ = std::move(*made);
  return client_.get();
}

Result<sfs::path> LifecycleSourceCache::resolve(const std::string& field,
                                                const std::string& source_uri,
                                                const std::string& on_create) {
  auto uri = parse_s3_uri(source_uri, field + ".SourceS3Uri");
  if (!uri) return uri.error();
  auto s3 = client(field);
  if (!s3) return s3.error();
  sfs::path source_dir = cache_root_ / (kSourcePrefix + sha256_hex(source_uri).substr(0, 16));
  auto fetched = fetch_lifecycle_scripts(**s3, field, source_uri, on_create, source_dir);
  if (fetched) return fetched->dir;
  if (fetched.error().code == kUnreachable) {
    sfs::path fallback = newest_snapshot(source_dir, on_create);
    if (!fallback.empty()) {
      log::warn("{}; running the copy of {} taken before: {}", fetched.error().message, source_uri,
                fallback.string());
      return fallback;
    }
  }
  return fetched.error();
}

bool is_lifecycle_snapshot(const sfs::path& path) {
  std::string source = path.parent_path().filename().string();
  return source.rfind(kSourcePrefix, 0) == 0 && is_hex(source.substr(3), 16) &&
         is_hex(path.filename().string(), 64);
}

Result<sfs::path> pin_lifecycle_snapshot(const sfs::path& pins_dir, const sfs::path& resolved) {
  if (!is_lifecycle_snapshot(resolved)) return resolved;
  sfs::path pin = pins_dir / resolved.parent_path().filename();
  std::error_code ec;
  if (sfs::exists(pin, ec)) {
    auto text = fs::read_file(pin);
    if (!text) return text.error();
    std::string digest = *text;
    while (!digest.empty() && (digest.back() == '\n' || digest.back() == ' ')) digest.pop_back();
    sfs::path pinned = resolved.parent_path() / digest;
    if (is_hex(digest, 64) && sfs::is_directory(pinned, ec)) return pinned;
    log::warn("{}: the pinned lifecycle snapshot {} is gone; pinning {}", pin.string(),
              pinned.string(), resolved.string());
  }
  if (auto st = fs::make_dirs(pins_dir, 0700); !st) return st.error();
  if (auto st = fs::atomic_write_file(pin, resolved.filename().string() + "\n"); !st) {
    return st.error();
  }
  return resolved;
}

}  // namespace endure::s3
