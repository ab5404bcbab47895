// A checkpoint folder kept as objects under s3://BUCKET/PREFIX, in the disk format byte for
// byte: PREFIX/step-<12 digits>/rank-<5 digits>.shard, rank-<5 digits>.json and
// MANIFEST.json, so that one reader serves both. The manifest object is written only after
// every rank's descriptor object, and a descriptor only after its shard object is whole: a
// step without its manifest does not exist. Every byte read back is checked, chunk by
// chunk, against the manifest's checksums.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "endure/checkpoint.h"
#include "s3/s3_client.h"
#include "s3/s3_uri.h"
#include "train/ckpt/shard_io.h"

namespace endure::ckpt {

// Whether a checkpoint folder or step path names an S3 prefix (s3://...).
bool is_s3(const std::filesystem::path& path);

class S3Store {
 public:
  // The store at `uri` (s3://BUCKET[/PREFIX]), reached with the AWS environment's
  // configuration (s3::config_from_environment). `field` names the setting in errors.
  static Result<std::shared_ptr<S3Store>> open(const std::string& uri,
                                               const std::string& field = "s3");
  S3Store(std::unique_ptr<s3::S3Client> client, s3::S3Uri uri);

  // s3://BUCKET/PREFIX/step-<12 digits>: what CheckpointInfo::path and tier_paths hold.
  std::filesystem::path step_path(int64_t step) const;

  // The steps with any object, newest first, each with whether its manifest is there.
  Result<std::map<int64_t, bool, std::greater<>>> steps() const;

  // Cheap checks of a committed step, as inspect() makes them on disk: the manifest
  // object seals and describes this step, every shard object has its size.
  CheckpointInfo inspect(int64_t step, json* manifest = nullptr) const;

  // The shard `shard` (a manifest's entry) of `step` into the segments (which cover it
  // exactly, in order), with ranged GETs of one checksum chunk each, in parallel, each
  // chunk checked against its checksum before its bytes are placed.
  Status read_verified(int64_t step, const json& shard, const std::vector<Segment>& segments) const;

  // This rank's shard of a step from a disk tier's step folder `from` (the shard file,
  // multipart in parallel parts, then its descriptor, byte for byte).
  Status put_shard(int64_t step, int rank, const std::filesystem::path& from) const;

  // Rank 0's commit: waits (up to timeout_seconds) for every rank's descriptor object, then
  // writes the manifest object, the same JSON as the shared folder's. Fails with
  // "Superseded" as soon as a rank it waits for has uploaded a newer step instead.
  Status commit(int64_t step, int world, const json& user, double timeout_seconds) const;

  // Retention as prune() applies it on disk: only steps below a newer committed one go;
  // a step's manifest is deleted first, so a step half deleted is never seen as whole.
  Status prune(int keep_last, int keep_every) const;

  const s3::S3Uri& uri() const { return uri_; }

 private:
  std::string key(int64_t step, const std::string& name) const;
  std::string step_prefix(int64_t step) const;
  // Whether `rank` has a descriptor object of a step above `step`.
  bool newer_descriptor(int rank, int64_t step) const;

  std::unique_ptr<s3::S3Client> client_;
  s3::S3Uri uri_;
  std::string base_;  // the prefix with a trailing '/', or "" for the whole bucket
};

// Every step of an S3 checkpoint folder, newest first, as Checkpointer::list() gives them.
Result<std::vector<CheckpointInfo>> list_s3(const S3Store& store);

}  // namespace endure::ckpt
