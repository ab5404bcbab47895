// An s3://bucket/prefix copied to a local folder, whole or not at all: what lifecycle
// scripts kept in object storage need before a node can run them as it runs a local folder.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"
#include "s3/s3_client.h"
#include "s3/s3_uri.h"

namespace endure::s3 {

// What is under a prefix, checked and named before any byte is copied.
struct PrefixListing {
  std::string bucket;
  std::string prefix;               // "" or ending in '/'
  std::vector<ObjectInfo> objects;  // in key order, folder markers left out
  std::vector<std::string> files;   // each object's path below the prefix
  std::string digest;               // SHA-256 of bucket, prefix, keys, sizes and ETags
};

struct FetchedPrefix {
  std::filesystem::path dir;       // the snapshot folder
  std::vector<std::string> files;  // paths relative to dir, in key order
  std::string digest;              // the listing's digest, dir's name
  bool reused = false;             // an identical snapshot was already in the cache
};

// The path below the prefix that key maps to, or "" when it must not be written: a folder
// marker (ends in '/'), or a name that would leave the folder (empty, ".", ".." segments).
// prefix is the folder prefix ("" or ending in '/').
std::string relative_path_for(const std::string& prefix, const std::string& key);

// Lists every object under uri, its key taken as a folder ("s3://b/scripts" means the keys
// under "scripts/"). Fails with the S3 error (naming bucket and key) for a missing bucket or
// a refused request, with NoSuchKey when nothing is under the prefix, and with
// ValidationException for a key that would leave the folder.
Result<PrefixListing> list_prefix(S3Client& client, const S3Uri& uri);

// Copies a listing's objects into cache_root/DIGEST: an unchanged prefix maps to the same
// snapshot and is not downloaded again, a changed one to a new folder, so a snapshot in use
// never changes under its reader. Assembled in a temp folder and renamed into place: the
// snapshot appears whole or not at all.
Result<FetchedPrefix> fetch_listing(S3Client& client, const PrefixListing& listing,
                                    const std::filesystem::path& cache_root);

// list_prefix, then fetch_listing.
Result<FetchedPrefix> fetch_prefix(S3Client& client, const S3Uri& uri,
                                   const std::filesystem::path& cache_root);

// A lifecycle source from object storage: lists source_uri, checks that it holds the
// OnCreate script before anything is copied, then fetches it as fetch_listing does. field
// names the setting in the errors ("InstanceGroups[0].LifeCycleConfig"); on any error
// nothing is written.
Result<FetchedPrefix> fetch_lifecycle_scripts(S3Client& client, const std::string& field,
                                              const std::string& source_uri,
                                              const std::string& on_create,
                                              const std::filesystem::path& cache_root);

}  // namespace endure::s3
