// Multipart uploads: create, parts in parallel, complete; abort on any failure so that no
// half object is ever visible under the key.
#include "common/error_codes.h"
#include "common/mapped_file.h"
#include "s3/parallel.h"
#include "s3/request_url.h"
#include "s3/s3_client.h"
#include "s3/s3_error.h"
#include "s3/xml_reader.h"

namespace endure::s3 {

namespace {
constexpr size_t kMaxParts = 10000;  // S3's limit per upload
}  // namespace

Status S3Client::upload(const std::string& bucket, const std::string& key, std::string_view data,
                        const UploadOptions& options) {
  if (data.size() <= config_.multipart_threshold) return put_object(bucket, key, data, options);
  return upload_multipart(bucket, key, data, options);
}

Status S3Client::upload_multipart(const std::string& bucket, const std::string& key,
                                  std::string_view data, const UploadOptions& options) {
  if (auto st = check_names(bucket, &key); !st) return st;
  const std::uint64_t part_size = config_.part_size;
  size_t parts = data.empty() ? 1 : (data.size() + part_size - 1) / part_size;
  if (parts > kMaxParts) {
    return make_error(errors::kValidationException,
                      "multipart upload to s3://" + bucket + "/" + key + ": " +
                          std::to_string(parts) + " parts of part_size " +
                          std::to_string(part_size) + " exceed S3's 10000; raise part_size");
  }

  HttpRequest create;
  create.method = "POST";
  create.url = object_url(config_, bucket, key, {{"uploads", ""}});
  create.content_type = options.content_type;
  auto created = execute(create, "CreateMultipartUpload", bucket, key);
  if (!created) return created.error();
  auto doc = parse_xml(created->body);
  std::string upload_id = doc ? doc->child_text("UploadId") : "";
  if (upload_id.empty()) {
    return make_error("MalformedXML", "CreateMultipartUpload s3://" + bucket + "/" + key +
                                          ": the reply holds no UploadId");
  }

  std::vector<std::string> etags(parts);
  Status uploaded = parallel_for(parts, config_.parallelism, [&](size_t i) -> Status {
    std::uint64_t offset = i * part_size;
    std::string_view body =
        data.substr(offset, std::min<std::uint64_t>(part_size, data.size() - offset));
    HttpRequest put;
    put.method = "PUT";
    put.url = object_url(config_, bucket, key,
                         {{"partNumber", std::to_string(i + 1)}, {"uploadId", upload_id}});
    put.body = body;
    auto r = execute(put, "UploadPart", bucket, key);
    if (!r) return r.error();
    etags[i] = r->headers["etag"];
    if (etags[i].empty()) {
      return make_error("MalformedReply", "UploadPart s3://" + bucket + "/" + key + " part " +
                                              std::to_string(i + 1) + ": the reply has no ETag");
    }
    if (options.on_part_uploaded) options.on_part_uploaded(static_cast<int>(i + 1), body.size());
    return Status::Ok();
  });

  Status completed = uploaded;
  if (uploaded) {
    std::string body = "<CompleteMultipartUpload>";
    for (size_t i = 0; i < parts; ++i) {
      body += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" +
              xml_escape(etags[i]) + "</ETag></Part>";
    }
    body += "</CompleteMultipartUpload>";
    HttpRequest complete;
    complete.method = "POST";
    complete.url = object_url(config_, bucket, key, {{"uploadId", upload_id}});
    complete.body = body;
    complete.content_type = "application/xml";
    auto r = execute(complete, "CompleteMultipartUpload", bucket, key);
    if (!r) completed = r.error();
  }
  if (completed) return Status::Ok();

  // Abort, so that the parts already stored go too; the object itself never appeared, since
  // only a successful complete makes it.
  HttpRequest abort;
  abort.method = "DELETE";
  abort.url = object_url(config_, bucket, key, {{"uploadId", upload_id}});
  auto aborted = execute(abort, "AbortMultipartUpload", bucket, key);
  Error error = completed.error();
  if (aborted) {
    error.message += "; the upload was aborted, nothing is stored under the key";
  } else {
    error.message += "; the upload " + upload_id + " could not be aborted (" +
                     aborted.error().message +
                     "): no object is visible under the key, its stored parts stay until a "
                     "lifecycle rule or a later abort removes them";
  }
  return error;
}

Status S3Client::upload_file(const std::string& bucket, const std::string& key,
                             const std::filesystem::path& path, const UploadOptions& options) {
  auto mapped = fs::MappedFile::open(path);  // the parts are sent from the page cache
  if (!mapped) {
    return make_error("IOError", "upload of " + path.string() + " to s3://" + bucket + "/" + key +
                                     ": " + mapped.error().message);
  }
  const auto& file = **mapped;
  return upload(bucket, key,
                std::string_view(reinterpret_cast<const char*>(file.data()), file.size()), options);
}

}  // namespace endure::s3
