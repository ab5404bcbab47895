// Lifecycle scripts kept in object storage, as endured's node providers use them: each
// s3:// source is copied into a snapshot folder (prefix_fetch.h), and each cluster keeps
// running the snapshot its first node ran until its spec names another source, as the
// cloud service runs a replacement node from the copy the cluster was created with.
//
// Layout under cache_root:
//   s3-<SOURCE>/<DIGEST>/   one snapshot: SOURCE is 16 hex digits of the source URI's
//                           SHA-256, DIGEST the SHA-256 of the listing it was copied from
// and under a cluster's pins folder (its own, removed with it):
//   s3-<SOURCE>             the DIGEST of the snapshot the cluster runs for that source
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/result.h"
#include "s3/s3_client.h"
#include "s3/s3_config.h"

namespace endure::s3 {

class LifecycleSourceCache {
 public:
  // The client's configuration comes from the environment with overrides laid over it
  // (config_from_environment; endured's S3 settings) at the first s3:// source, so that an
  // endured with no S3 use needs none.
  explicit LifecycleSourceCache(std::filesystem::path cache_root, ConfigOverrides overrides = {});
  // With a configuration given (endured's settings, tests).
  LifecycleSourceCache(std::filesystem::path cache_root, S3Config config);

  // The snapshot folder of source_uri, fetched now; it holds on_create. Errors name field
  // ("InstanceGroups[0].LifeCycleConfig"), the bucket and the key, and write nothing. When
  // the endpoint does not answer at all, the newest snapshot already taken of the same source
  // serves instead (a replacement node must not wait on object storage), and only when there
  // is none does the fetch fail.
  Result<std::filesystem::path> resolve(const std::string& field, const std::string& source_uri,
                                        const std::string& on_create);

 private:
  Result<S3Client*> client(const std::string& field);

  std::filesystem::path cache_root_;
  std::optional<S3Config> config_;
  ConfigOverrides overrides_;  // without config_
  std::mutex mu_;
  std::unique_ptr<S3Client> client_;
};

// True when path is a snapshot folder of a LifecycleSourceCache (s3-<SOURCE>/<DIGEST>).
bool is_lifecycle_snapshot(const std::filesystem::path& path);

// The folder a cluster's node runs its lifecycle scripts from. resolved is what
// resolve_lifecycle_source gave; a folder that is not a snapshot is returned as it is. For a
// snapshot: the one pinned in pins_dir for its source when that still exists, else resolved,
// which is pinned from now on.
Result<std::filesystem::path> pin_lifecycle_snapshot(const std::filesystem::path& pins_dir,
                                                     const std::filesystem::path& resolved);

}  // namespace endure::s3
