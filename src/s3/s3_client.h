// An S3 client: objects, listings, multipart uploads in parallel and ranged parallel GETs,
// against AWS or any S3-compatible store, with bounded retries. Errors are values and name
// the operation, bucket and key with S3's own code and message.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "s3/http_transport.h"
#include "s3/s3_config.h"

namespace endure::s3 {

struct ObjectInfo {
  std::string key;
  std::uint64_t size = 0;
  std::string etag;           // as S3 sends it, quotes included
  std::string last_modified;  // ISO 8601 (listings) or HTTP date (HEAD)
};

struct ListOptions {
  std::string prefix;
  std::string delimiter;  // "/" groups keys below the next '/' into common_prefixes
  int max_keys = 1000;    // per page, 1 to 1000
  std::string continuation_token;
};

struct ListPage {
  std::vector<ObjectInfo> objects;
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_continuation_token;
};

struct UploadOptions {
  std::string content_type = "application/octet-stream";
  // Called (from a worker thread) as each part of a multipart upload completes.
  std::function<void(int part_number, std::uint64_t bytes)> on_part_uploaded;
};

class S3Client {
 public:
  // Checks the configuration (validate_config) and makes a client. Thread-safe after that:
  // calls may run from several threads at once.
  static Result<std::unique_ptr<S3Client>> create(const S3Config& config);
  const S3Config& config() const { return config_; }

  // PutObject: the whole of data in one request (S3 allows up to 5 GiB).
  Status put_object(const std::string& bucket, const std::string& key, std::string_view data,
                    const UploadOptions& options = {});
  // The whole object.
  Result<std::string> get_object(const std::string& bucket, const std::string& key);
  // length bytes from offset (fewer when the object ends first).
  Result<std::string> get_object_range(const std::string& bucket, const std::string& key,
                                       std::uint64_t offset, std::uint64_t length);
  // Size, ETag and date; NotFound when there is no such object.
  Result<ObjectInfo> head_object(const std::string& bucket, const std::string& key);
  // Succeeds when the key is already gone, as S3 does.
  Status delete_object(const std::string& bucket, const std::string& key);
  // DeleteObjects, 1000 keys a request; fails naming the first key S3 could not delete.
  Status delete_objects(const std::string& bucket, const std::vector<std::string>& keys);

  // One page of ListObjectsV2.
  Result<ListPage> list_objects_page(const std::string& bucket, const ListOptions& options);
  // Every object under prefix, following continuation tokens to the last page.
  Result<std::vector<ObjectInfo>> list_objects(const std::string& bucket,
                                               const std::string& prefix);

  // Uploads data as one object: one PutObject up to config().multipart_threshold, else a
  // multipart upload. Either way the object appears whole or not at all.
  Status upload(const std::string& bucket, const std::string& key, std::string_view data,
                const UploadOptions& options = {});
  // A multipart upload: parts of config().part_size, config().parallelism of them in
  // flight, completed only when every part is in. On any failure the upload is aborted, so
  // no object (and, on stores that honour the abort, no stored part) is left.
  Status upload_multipart(const std::string& bucket, const std::string& key, std::string_view data,
                          const UploadOptions& options = {});
  // Uploads a file's contents (mapped, not copied) as upload() does.
  Status upload_file(const std::string& bucket, const std::string& key,
                     const std::filesystem::path& path, const UploadOptions& options = {});

  // The object into buffer (capacity bytes) with ranged GETs of config().part_size,
  // config().parallelism in flight; returns its size. Fails when it does not fit.
  Result<std::uint64_t> download_to_buffer(const std::string& bucket, const std::string& key,
                                           char* buffer, std::uint64_t capacity);
  // The object into path with ranged parallel GETs, through a temp file beside it that is
  // fsynced and renamed into place: a failed download leaves no file or the old one.
  Status download_to_file(const std::string& bucket, const std::string& key,
                          const std::filesystem::path& path);

 private:
  explicit S3Client(const S3Config& config);

  // Runs request with the retry policy; a non-2xx reply (or no reply) becomes an Error
  // naming operation, bucket and key.
  Result<HttpResponse> execute(HttpRequest& request, std::string_view operation,
                               const std::string& bucket, const std::string& key);
  Status check_names(const std::string& bucket, const std::string* key) const;
  // Fills buffer-or-file ranges in parallel: write(offset, data, size) per received chunk.
  // Every range must come from the version whose ETag is etag (when not empty).
  Status ranged_get(const std::string& bucket, const std::string& key, std::uint64_t size,
                    const std::string& etag,
                    const std::function<bool(std::uint64_t, const char*, size_t)>& write);

  S3Config config_;
  HttpTransport transport_;
};

}  // namespace endure::s3
