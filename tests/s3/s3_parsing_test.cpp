// The S3 client's pure parts, no server: URIs, configuration and credentials files, URLs,
// the XML reader, error messages and the retry policy.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/fs.h"
#include "s3/request_url.h"
#include "s3/retry_policy.h"
#include "s3/s3_config.h"
#include "s3/s3_error.h"
#include "s3/s3_uri.h"
#include "s3/xml_reader.h"
#include "support/temp_dir.h"
#include "support/text_files.h"

namespace endure::s3 {
namespace {

using test::contains;

Status write_text(const std::filesystem::path& path, const std::string& text) {
  if (auto st = fs::make_dirs(path.parent_path()); !st) return st;
  return fs::atomic_write_file(path, text);
}

TEST(S3Uri, ParsesBucketAndPrefix) {
  auto uri = parse_s3_uri("s3://sagemaker-lifecycle/scripts/base/");
  ASSERT_TRUE(uri) << uri.error().message;
  EXPECT_EQ(uri->bucket, "sagemaker-lifecycle");
  EXPECT_EQ(uri->key, "scripts/base/");
  EXPECT_EQ(uri->str(), "s3://sagemaker-lifecycle/scripts/base/");
  auto bare = parse_s3_uri("s3://my.bucket-1");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->bucket, "my.bucket-1");
  EXPECT_EQ(bare->key, "");
}

TEST(S3Uri, RefusesMalformedUrisNamingFieldAndRule) {
  struct Case {
    const char* text;
    const char* rule;
  } cases[] = {
      {"https://bucket/key", "must start with s3://"},
      {"bucket/key", "must start with s3://"},
      {"s3://", "bucket name is empty"},
      {"s3:///key", "bucket name is empty"},
      {"s3://ab/key", "3 to 63 characters"},
      {"s3://My-Bucket/key", "lowercase letters"},
      {"s3://bucket_name/key", "lowercase letters"},
      {"s3://-bucket/key", "begins and ends"},
      {"s3://bucket-/key", "begins and ends"},
      {"s3://a..b/key", "adjacent dots"},
  };
  for (const auto& c : cases) {
    auto uri = parse_s3_uri(c.text, "LifeCycleConfig.SourceS3Uri");
    ASSERT_FALSE(uri) << c.text;
    EXPECT_EQ(uri.error().code, "ValidationException");
    EXPECT_PRED2(contains, uri.error().message, "LifeCycleConfig.SourceS3Uri") << c.text;
    EXPECT_PRED2(contains, uri.error().message, c.text);
    EXPECT_PRED2(contains, uri.error().message, c.rule) << c.text;
  }
  EXPECT_FALSE(parse_s3_uri("s3://bucket/" + std::string(1025, 'k')));
}

S3Config valid_config() {
  S3Config c;
  c.endpoint_url = "http://127.0.0.1:9000";
  c.path_style = true;
  c.credentials = {"AKID", "SECRET", ""};
  return c;
}

TEST(S3Config, ValidatesEveryFieldWithItsRule) {
  EXPECT_TRUE(validate_config(valid_config()));
  struct Case {
    void (*change)(S3Config&);
    const char* words;
  } cases[] = {
      {[](S3Config& c) { c.endpoint_url = "ftp://host"; }, "must start with http:// or https://"},
      {[](S3Config& c) { c.endpoint_url = "http://"; }, "names no host"},
      {[](S3Config& c) { c.endpoint_url = "http://host/path"; }, "no path"},
      {[](S3Config& c) { c.endpoint_url = "http://host:99999"; }, "port must be"},
      {[](S3Config& c) { c.endpoint_url = "http://host:x"; }, "port must be"},
      {[](S3Config& c) { c.region = ""; }, "S3 region"},
      {[](S3Config& c) { c.region = "US East"; }, "S3 region"},
      {[](S3Config& c) { c.credentials.secret_access_key = ""; }, "secret access key"},
      {[](S3Config& c) { c.parallelism = 0; }, "parallelism"},
      {[](S3Config& c) { c.part_size = 1 << 20; }, "part_size"},
      {[](S3Config& c) { c.retry.max_attempts = 0; }, "max_attempts"},
      {[](S3Config& c) { c.multipart_threshold = 1; }, "multipart_threshold"},
      {[](S3Config& c) { c.path_style = false; }, "needs path-style addressing"},
      {[](S3Config& c) {
         c.endpoint_url = "http://localhost:9000/";
         c.path_style = false;
       },
       "needs path-style addressing"},
  };
  for (const auto& c : cases) {
    S3Config config = valid_config();
    c.change(config);
    Status st = validate_config(config);
    ASSERT_FALSE(st) << c.words;
    EXPECT_EQ(st.error().code, "ValidationException");
    EXPECT_PRED2(contains, st.error().message, c.words);
  }
  S3Config trailing = valid_config();
  trailing.endpoint_url = "https://minio.example:9000/";
  EXPECT_TRUE(validate_config(trailing));
  trailing.path_style = false;  // a name can carry the bucket
  EXPECT_TRUE(validate_config(trailing));
}

TEST(S3Config, BucketUrlByAddressingStyle) {
  S3Config c = valid_config();
  EXPECT_EQ(c.bucket_url("data"), "http://127.0.0.1:9000/data");
  c.path_style = false;
  EXPECT_EQ(c.bucket_url("data"), "http://data.127.0.0.1:9000");
  S3Config aws;
  aws.region = "eu-west-1";
  EXPECT_EQ(aws.bucket_url("data"), "https://data.s3.eu-west-1.amazonaws.com");
}

TEST(S3Config, FromEnvironmentVariables) {
  auto c = config_from_environment({{"AWS_ACCESS_KEY_ID", "AKID"},
                                    {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                                    {"AWS_SESSION_TOKEN", "TOKEN"},
                                    {"AWS_ENDPOINT_URL", "http://127.0.0.1:9000"},
                                    {"AWS_DEFAULT_REGION", "eu-west-1"}});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->credentials.access_key_id, "AKID");
  EXPECT_EQ(c->credentials.secret_access_key, "SECRET");
  EXPECT_EQ(c->credentials.session_token, "TOKEN");
  EXPECT_EQ(c->endpoint_url, "http://127.0.0.1:9000");
  EXPECT_TRUE(c->path_style);
  EXPECT_EQ(c->region, "eu-west-1");

  // AWS_REGION wins over AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL.
  auto d = config_from_environment({{"AWS_ACCESS_KEY_ID", "A"},
                                    {"AWS_SECRET_ACCESS_KEY", "S"},
                                    {"AWS_REGION", "ap-south-1"},
                                    {"AWS_DEFAULT_REGION", "eu-west-1"},
                                    {"AWS_ENDPOINT_URL", "http://127.0.0.1:1"},
                                    {"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:2"}});
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->region, "ap-south-1");
  EXPECT_EQ(d->endpoint_url, "http://127.0.0.1:2");

  // No endpoint: AWS itself, virtual-hosted.
  auto aws = config_from_environment({{"AWS_ACCESS_KEY_ID", "A"}, {"AWS_SECRET_ACCESS_KEY", "S"}});
  ASSERT_TRUE(aws);
  EXPECT_FALSE(aws->path_style);
  EXPECT_EQ(aws->region, "us-east-1");

  auto half = config_from_environment({{"AWS_ACCESS_KEY_ID", "A"}});
  ASSERT_FALSE(half);
  EXPECT_PRED2(contains, half.error().message, "AWS_SECRET_ACCESS_KEY is not set");

  auto bad = config_from_environment(
      {{"AWS_ACCESS_KEY_ID", "A"}, {"AWS_SECRET_ACCESS_KEY", "S"}, {"AWS_ENDPOINT_URL", "x"}});
  ASSERT_FALSE(bad);
  EXPECT_PRED2(contains, bad.error().message, "S3 endpoint URL 'x'");
}

TEST(S3Config, FromSharedCredentialsFile) {
  test::TempDir dir("endure-s3-creds");
  std::string text =
      "# written by aws configure\n"
      "[default]\n"
      "aws_access_key_id = DEFAULTKEY\n"
      "aws_secret_access_key = defaultsecret\n"
      "\n"
      "; a second profile\n"
      "[training]\n"
      "aws_access_key_id=TRAINKEY\n"
      "aws_secret_access_key=train/secret+x\n"
      "aws_session_token = tok\n";
  ASSERT_TRUE(write_text(dir.str("credentials"), text));
  auto c = config_from_environment(
      {{"AWS_SHARED_CREDENTIALS_FILE", dir.str("credentials")}, {"AWS_PROFILE", "training"}});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->credentials.access_key_id, "TRAINKEY");
  EXPECT_EQ(c->credentials.secret_access_key, "train/secret+x");
  EXPECT_EQ(c->credentials.session_token, "tok");

  // $HOME/.aws/credentials and the default profile when nothing else is said.
  ASSERT_TRUE(write_text(dir.str(".aws/credentials"), text));
  auto home = config_from_environment({{"HOME", dir.str()}});
  ASSERT_TRUE(home) << home.error().message;
  EXPECT_EQ(home->credentials.access_key_id, "DEFAULTKEY");

  // Environment variables win over the file.
  auto env = config_from_environment(
      {{"HOME", dir.str()}, {"AWS_ACCESS_KEY_ID", "E"}, {"AWS_SECRET_ACCESS_KEY", "S"}});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->credentials.access_key_id, "E");

  auto missing = config_from_environment({{"HOME", dir.str()}, {"AWS_PROFILE", "nope"}});
  ASSERT_FALSE(missing);
  EXPECT_PRED2(contains, missing.error().message, "no profile [nope]");

  auto none = config_from_environment({{"HOME", dir.str("empty-home")}});
  ASSERT_FALSE(none);
  EXPECT_PRED2(contains, none.error().message, "S3 credentials: none found");
}

TEST(S3Config, CredentialsFileRules) {
  auto half = parse_credentials_file("[default]\naws_access_key_id = A\n", "default");
  ASSERT_FALSE(half);
  EXPECT_PRED2(contains, half.error().message, "needs both");
  auto malformed = parse_credentials_file("[default]\njust a line\n", "default");
  ASSERT_FALSE(malformed);
  EXPECT_PRED2(contains, malformed.error().message, "line 2");
  auto header = parse_credentials_file("[default\n", "default");
  ASSERT_FALSE(header);
  auto profile = parse_credentials_file(
      "[profile ci]\naws_access_key_id = A\naws_secret_access_key = B\n", "ci");
  ASSERT_TRUE(profile) << profile.error().message;
  EXPECT_EQ(profile->access_key_id, "A");
}

TEST(RequestUrl, EncodesKeysAndSortsQuery) {
  EXPECT_EQ(uri_encode("a b/c+d~e_f.g-h", true), "a%20b/c%2Bd~e_f.g-h");
  EXPECT_EQ(uri_encode("a/b", false), "a%2Fb");
  EXPECT_EQ(uri_encode("\xc3\xa9", true), "%C3%A9");
  S3Config c = valid_config();
  EXPECT_EQ(object_url(c, "bkt", "dir/my file", {{"uploadId", "x/y"}, {"partNumber", "3"}}),
            "http://127.0.0.1:9000/bkt/dir/my%20file?partNumber=3&uploadId=x%2Fy");
  EXPECT_EQ(object_url(c, "bkt", "", {{"uploads", ""}}), "http://127.0.0.1:9000/bkt?uploads=");
}

TEST(XmlReader, ReadsAListing) {
  auto doc = parse_xml(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>b</Name><IsTruncated>true</IsTruncated>"
      "<Contents><Key>a&amp;b &lt;1&gt; &#233;&#x41;</Key><Size>12</Size></Contents>"
      "<!-- a comment -->"
      "<Contents><Key><![CDATA[x<y]]></Key><Size>3</Size></Contents>"
      "<s3:NextContinuationToken>tok==</s3:NextContinuationToken>"
      "<Empty/>"
      "</ListBucketResult>");
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->name, "ListBucketResult");
  auto contents = doc->all("Contents");
  ASSERT_EQ(contents.size(), 2u);
  EXPECT_EQ(contents[0]->child_text("Key"),
            "a&b <1> \xc3\xa9"
            "A");
  EXPECT_EQ(contents[1]->child_text("Key"), "x<y");
  EXPECT_EQ(doc->child_text("NextContinuationToken"), "tok==");
  EXPECT_EQ(doc->child_text("Missing"), "");
  EXPECT_NE(doc->child("Empty"), nullptr);
}

TEST(XmlReader, RefusesBrokenDocuments) {
  const char* broken[] = {
      "",
      "<a>",
      "<a></b>",
      "<a><b></a></b>",
      "<a>&bogus;</a>",
      "<a>&#xZZ;</a>",
      "<a x=1></a>",
      "<a></a><b></b>",
      "text",
  };
  for (const char* doc : broken) {
    auto r = parse_xml(doc);
    ASSERT_FALSE(r) << doc;
    EXPECT_EQ(r.error().code, "MalformedXML");
  }
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  EXPECT_FALSE(parse_xml(deep));
  EXPECT_EQ(xml_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
}

TEST(S3Error, NamesOperationBucketKeyAndS3Code) {
  std::string body =
      "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code>"
      "<Message>The specified key does not exist.</Message></Error>";
  Error e = reply_error("GetObject", "bkt", "a/b", 404, body, 1);
  EXPECT_EQ(e.code, "NoSuchKey");
  EXPECT_EQ(e.message,
            "GetObject s3://bkt/a/b: not found (404 NoSuchKey: The specified key does not exist.)");
  EXPECT_TRUE(is_not_found(e));

  Error head = reply_error("HeadObject", "bkt", "k", 404, "", 1);
  EXPECT_EQ(head.code, "NotFound");
  Error denied = reply_error("PutObject", "bkt", "k", 403, "", 1);
  EXPECT_EQ(denied.code, "AccessDenied");
  EXPECT_PRED2(contains, denied.message, "s3://bkt/k: access denied");
  EXPECT_TRUE(is_access_denied(denied));
  Error busy = reply_error("PutObject", "bkt", "k", 503, "<Error><Code>SlowDown</Code></Error>", 5);
  EXPECT_PRED2(contains, busy.message, "503 SlowDown");
  EXPECT_PRED2(contains, busy.message, "after 5 attempts");
  Error gone = unreachable_error("GetObject", "bkt", "k", "Connection refused", 3);
  EXPECT_EQ(gone.code, kUnreachable);
  EXPECT_PRED2(contains, gone.message, "s3://bkt/k");
  EXPECT_PRED2(contains, gone.message, "after 3 attempts");
}

TEST(RetryPolicy, RetriesTransientFailuresOnly) {
  auto status = [](long s, std::string code = "") {
    AttemptOutcome o;
    o.http_status = s;
    o.s3_code = std::move(code);
    return o;
  };
  EXPECT_TRUE(is_retryable(status(500)));
  EXPECT_TRUE(is_retryable(status(503, "SlowDown")));
  EXPECT_TRUE(is_retryable(status(429)));
  EXPECT_TRUE(is_retryable(status(400, "RequestTimeout")));
  EXPECT_TRUE(is_retryable(status(200, "InternalError")));
  EXPECT_FALSE(is_retryable(status(400, "InvalidArgument")));
  EXPECT_FALSE(is_retryable(status(403, "SignatureDoesNotMatch")));
  EXPECT_FALSE(is_retryable(status(404, "NoSuchKey")));
  EXPECT_FALSE(is_retryable(status(412)));
  AttemptOutcome refused;
  refused.transport_failed = true;
  refused.transport_retryable = true;
  EXPECT_TRUE(is_retryable(refused));
  refused.transport_retryable = false;
  EXPECT_FALSE(is_retryable(refused));
}

TEST(RetryPolicy, BackoffGrowsWithJitterUpToItsCap) {
  RetryPolicy p;
  p.base_delay = std::chrono::milliseconds(100);
  p.max_delay = std::chrono::milliseconds(1000);
  EXPECT_EQ(backoff_delay(p, 0, 0.999).count(), 99);
  EXPECT_EQ(backoff_delay(p, 1, 0.999).count(), 199);
  EXPECT_EQ(backoff_delay(p, 3, 0.999).count(), 799);
  EXPECT_EQ(backoff_delay(p, 4, 0.999).count(), 999);
  EXPECT_EQ(backoff_delay(p, 60, 0.999).count(), 999);
  EXPECT_EQ(backoff_delay(p, 2, 0.0).count(), 0);
  EXPECT_EQ(backoff_delay(p, 2, 0.5).count(), 200);
}

}  // namespace
}  // namespace endure::s3
