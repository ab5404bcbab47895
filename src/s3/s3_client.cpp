#include "s3/s3_client.h"

#include <charconv>
#include <random>
#include <thread>

#include "common/error_codes.h"
#include "s3/request_url.h"
#include "s3/retry_policy.h"
#include "s3/s3_error.h"
#include "s3/s3_uri.h"
#include "s3/xml_reader.h"

namespace endure::s3 {

namespace {

bool success(long status) { return status >= 200 && status < 300; }

double uniform01() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

std::uint64_t to_u64(const std::string& text) {
  std::uint64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

}  // namespace

S3Client::S3Client(const S3Config& config) : config_(config), transport_(config) {}

Result<std::unique_ptr<S3Client>> S3Client::create(const S3Config& config) {
  if (auto st = validate_config(config); !st) return st.error();
  return std::unique_ptr<S3Client>(new S3Client(config));
}

Status S3Client::check_names(const std::string& bucket, const std::string* key) const {
  if (auto problem = bucket_name_problem(bucket); !problem.empty()) {
    return make_error(errors::kValidationException, "bucket '" + bucket + "': " + problem);
  }
  if (key != nullptr) {
    if (auto problem = object_key_problem(*key); !problem.empty()) {
      return make_error(errors::kValidationException,
                        "key '" + *key + "' in bucket " + bucket + ": " + problem);
    }
  }
  return Status::Ok();
}

Result<HttpResponse> S3Client::execute(HttpRequest& request, std::string_view operation,
                                       const std::string& bucket, const std::string& key) {
  for (int attempt = 1;; ++attempt) {
    if (request.sink_reset) request.sink_reset();
    HttpResponse response = transport_.perform(request);
    AttemptOutcome outcome;
    outcome.transport_failed = response.transport_failed;
    outcome.transport_retryable = response.transport_retryable;
    outcome.http_status = response.status;
    bool ok = !response.transport_failed && success(response.status);
    if (!response.transport_failed) {
      std::string code = parse_error_body(response.body).code;
      // CompleteMultipartUpload can fail after its 200 header: the error is in the body.
      if (ok && operation == "CompleteMultipartUpload" && !code.empty()) ok = false;
      if (!ok) outcome.s3_code = code;
    }
    if (ok) return response;
    if (!is_retryable(outcome) || attempt >= config_.retry.max_attempts) {
      if (response.transport_failed) {
        return unreachable_error(operation, bucket, key, response.transport_error, attempt);
      }
      return reply_error(operation, bucket, key, response.status, response.body, attempt);
    }
    std::this_thread::sleep_for(backoff_delay(config_.retry, attempt - 1, uniform01()));
  }
}

Status S3Client::put_object(const std::string& bucket, const std::string& key,
                            std::string_view data, const UploadOptions& options) {
  if (auto st = check_names(bucket, &key); !st) return st;
  HttpRequest request;
  request.method = "PUT";
  request.url = object_url(config_, bucket, key);
  request.body = data;
  request.content_type = options.content_type;
  auto r = execute(request, "PutObject", bucket, key);
  if (!r) return r.error();
  return Status::Ok();
}

Result<std::string> S3Client::get_object(const std::string& bucket, const std::string& key) {
  if (auto st = check_names(bucket, &key); !st) return st.error();
  HttpRequest request;
  request.url = object_url(config_, bucket, key);
  auto r = execute(request, "GetObject", bucket, key);
  if (!r) return r.error();
  return std::move(r->body);
}

Result<std::string> S3Client::get_object_range(const std::string& bucket, const std::string& key,
                                               std::uint64_t offset, std::uint64_t length) {
  if (auto st = check_names(bucket, &key); !st) return st.error();
  if (length == 0) return std::string();
  HttpRequest request;
  request.url = object_url(config_, bucket, key);
  request.headers.push_back("Range: bytes=" + std::to_string(offset) + "-" +
                            std::to_string(offset + length - 1));
  auto r = execute(request, "GetObject", bucket, key);
  if (!r) return r.error();
  // A server that ignores Range answers 200 with the whole object.
  if (r->status == 200 && r->body.size() > length) return r->body.substr(offset, length);
  return std::move(r->body);
}

Result<ObjectInfo> S3Client::head_object(const std::string& bucket, const std::string& key) {
  if (auto st = check_names(bucket, &key); !st) return st.error();
  HttpRequest request;
  request.method = "HEAD";
  request.url = object_url(config_, bucket, key);
  auto r = execute(request, "HeadObject", bucket, key);
  if (!r) return r.error();
  ObjectInfo info;
  info.key = key;
  info.size = to_u64(r->headers["content-length"]);
  info.etag = r->headers["etag"];
  info.last_modified = r->headers["last-modified"];
  return info;
}

Status S3Client::delete_object(const std::string& bucket, const std::string& key) {
  if (auto st = check_names(bucket, &key); !st) return st;
  HttpRequest request;
  request.method = "DELETE";
  request.url = object_url(config_, bucket, key);
  auto r = execute(request, "DeleteObject", bucket, key);
  if (!r) return r.error();
  return Status::Ok();
}

Status S3Client::delete_objects(const std::string& bucket, const std::vector<std::string>& keys) {
  if (auto st = check_names(bucket, nullptr); !st) return st;
  for (const auto& key : keys) {
    if (auto st = check_names(bucket, &key); !st) return st;
  }
  constexpr size_t kBatch = 1000;  // S3's limit per DeleteObjects request
  for (size_t start = 0; start < keys.size(); start += kBatch) {
    std::string body = "<Delete><Quiet>true</Quiet>";
    for (size_t i = start; i < std::min(keys.size(), start + kBatch); ++i) {
      body += "<Object><Key>" + xml_escape(keys[i]) + "</Key></Object>";
    }
    body += "</Delete>";
    HttpRequest request;
    request.method = "POST";
    request.url = object_url(config_, bucket, "", {{"delete", ""}});
    request.body = body;
    request.content_type = "application/xml";
    request.headers.push_back("Content-MD5: " + md5_base64(body));
    auto r = execute(request, "DeleteObjects", bucket, "");
    if (!r) return r.error();
    auto doc = parse_xml(r->body);
    if (!doc)
      return make_error("MalformedXML",
                        "DeleteObjects s3://" + bucket + ": " + doc.error().message);
    // A 200 reply lists the keys it could not delete; the first one names the failure.
    if (auto errors = doc->all("Error"); !errors.empty()) {
      const XmlElement* e = errors.front();
      return make_error(e->child_text("Code"),
                        "DeleteObjects s3://" + bucket + "/" + e->child_text("Key") + ": " +
                            e->child_text("Code") + ": " + e->child_text("Message"));
    }
  }
  return Status::Ok();
}

Result<ListPage> S3Client::list_objects_page(const std::string& bucket,
                                             const ListOptions& options) {
  if (auto st = check_names(bucket, nullptr); !st) return st.error();
  if (options.max_keys < 1 || options.max_keys > 1000) {
    return make_error(errors::kValidationException,
                      "ListObjectsV2 max_keys: must be from 1 to 1000");
  }
  std::map<std::string, std::string> query = {{"list-type", "2"},
                                              {"max-keys", std::to_string(options.max_keys)}};
  if (!options.prefix.empty()) query["prefix"] = options.prefix;
  if (!options.delimiter.empty()) query["delimiter"] = options.delimiter;
  if (!options.continuation_token.empty()) {
    query["continuation-token"] = options.continuation_token;
  }
  HttpRequest request;
  request.url = object_url(config_, bucket, "", query);
  auto r = execute(request, "ListObjectsV2", bucket, options.prefix);
  if (!r) return r.error();
  auto doc = parse_xml(r->body);
  if (!doc || doc->name != "ListBucketResult") {
    return make_error("MalformedXML", "ListObjectsV2 s3://" + bucket + "/" + options.prefix +
                                          ": the reply is not a ListBucketResult" +
                                          (doc ? "" : " (" + doc.error().message + ")"));
  }
  ListPage page;
  for (const XmlElement* c : doc->all("Contents")) {
    page.objects.push_back({c->child_text("Key"), to_u64(c->child_text("Size")),
                            c->child_text("ETag"), c->child_text("LastModified")});
  }
  for (const XmlElement* p : doc->all("CommonPrefixes")) {
    page.common_prefixes.push_back(p->child_text("Prefix"));
  }
  page.truncated = doc->child_text("IsTruncated") == "true";
  page.next_continuation_token = doc->child_text("NextContinuationToken");
  if (page.truncated && page.next_continuation_token.empty()) {
    return make_error("MalformedXML", "ListObjectsV2 s3://" + bucket + "/" + options.prefix +
                                          ": a truncated page without NextContinuationToken");
  }
  return page;
}

Result<std::vector<ObjectInfo>> S3Client::list_objects(const std::string& bucket,
                                                       const std::string& prefix) {
  std::vector<ObjectInfo> all;
  ListOptions options;
  options.prefix = prefix;
  for (;;) {
    auto page = list_objects_page(bucket, options);
    if (!page) return page.error();
    for (auto& o : page->objects) all.push_back(std::move(o));
    if (!page->truncated) return all;
    // A token that does not move would loop forever.
    if (page->next_continuation_token == options.continuation_token) {
      return make_error("MalformedXML", "ListObjectsV2 s3://" + bucket + "/" + prefix +
                                            ": the continuation token did not advance");
    }
    options.continuation_token = page->next_continuation_token;
  }
}

}  // namespace endure::s3
