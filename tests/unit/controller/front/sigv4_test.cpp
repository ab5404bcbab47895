// The Signature Version 4 verifier: AWS's published test vectors (aws-sig-v4-test-suite,
// credentials AKIDEXAMPLE, 20150830T123600Z, us-east-1, service "service"), a request
// signed by botocore, and requests signed here and then spoiled one part at a time.
#include "controller/front/sigv4.h"

#include <gtest/gtest.h>

#include <map>

namespace endure::controller::sigv4 {
namespace {

const char* kVectorKey = "AKIDEXAMPLE";
const char* kVectorSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const char* kVectorDate = "20150830T123600Z";

Request vector_request(const std::string& method,
                       std::vector<std::pair<std::string, std::string>> query = {}) {
  return {method,
          "/",
          std::move(query),
          {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", kVectorDate}},
          ""};
}

std::string signature_of(const std::string& authorization) {
  return authorization.substr(authorization.find("Signature=") + 10);
}

TEST(SigV4, DerivesThePublishedSigningKey) {
  // AWS's "derive a signing key" example: IAM, us-east-1, 20120215.
  EXPECT_EQ(to_hex(signing_key(kVectorSecret, "20120215", "us-east-1", "iam")),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

TEST(SigV4, GetVanillaMatchesTheTestSuite) {
  Request r = vector_request("GET");
  std::string canonical = canonical_request(r, {"host", "x-amz-date"}, sha256_hex(""));
  EXPECT_EQ(canonical,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(string_to_sign(kVectorDate, "20150830/us-east-1/service/aws4_request", canonical),
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(sign(r, kVectorKey, kVectorSecret, "us-east-1", "service"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST(SigV4, OtherVectorsOfTheTestSuite) {
  EXPECT_EQ(
      signature_of(sign(vector_request("POST"), kVectorKey, kVectorSecret, "us-east-1", "service")),
      "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
  // get-vanilla-query-order-key-case: parameters sorted by name.
  EXPECT_EQ(signature_of(sign(vector_request("GET", {{"Param2", "value2"}, {"Param1", "value1"}}),
                              kVectorKey, kVectorSecret, "us-east-1", "service")),
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
  // get-vanilla-query-order-value: the same name, sorted by value.
  EXPECT_EQ(signature_of(sign(vector_request("GET", {{"Param1", "value2"}, {"Param1", "value1"}}),
                              kVectorKey, kVectorSecret, "us-east-1", "service")),
            "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694");
}

TEST(SigV4, VerifiesTheTestSuiteRequestWithinTheSkewLimit) {
  Request r = vector_request("GET");
  r.headers.push_back(
      {"Authorization", sign(r, kVectorKey, kVectorSecret, "us-east-1", "service")});
  auto secret_of = [](const std::string& id) -> std::optional<std::string> {
    return id == kVectorKey ? std::optional<std::string>(kVectorSecret) : std::nullopt;
  };
  double at = *parse_amz_date(kVectorDate);
  auto ok = verify(r, secret_of, at + 14 * 60, "service");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(*ok, kVectorKey);
  auto late = verify(r, secret_of, at + 16 * 60, "service");
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, kInvalidSignature);
  EXPECT_NE(late.error().message.find("Signature expired"), std::string::npos);
  auto early = verify(r, secret_of, at - 16 * 60, "service");
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().code, kInvalidSignature);
}

TEST(SigV4, VerifiesARequestBotocoreSigned) {
  // botocore 1.43.11's SigV4Auth for `aws sagemaker describe-cluster --cluster-name demo`.
  Request r{"POST",
            "/",
            {},
            {{"Host", "127.0.0.1:7117"},
             {"X-Amz-Target", "SageMaker.DescribeCluster"},
             {"Content-Type", "application/x-amz-json-1.1"},
             {"X-Amz-Date", "20261206T000034Z"},
             {"Authorization",
              "AWS4-HMAC-SHA256 Credential=AKIAENDUREEXAMPLE000/20261206/us-east-1/sagemaker/"
              "aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, "
              "Signature=d4172aab2a52318da90e316dd9fce20e80d0bfc6879190d99a9c52f65599ecdb"}},
            R"({"ClusterName": "demo"})"};
  auto secret_of = [](const std::string& id) -> std::optional<std::string> {
    if (id != "AKIAENDUREEXAMPLE000") return std::nullopt;
    return std::string("0123456789abcdef0123456789abcdef01234567");
  };
  auto ok = verify(r, secret_of, *parse_amz_date("20261206T000100Z"), "sagemaker");
  ASSERT_TRUE(ok) << ok.error().code << ": " << ok.error().message;
  r.body = R"({"ClusterName": "demo2"})";
  auto changed = verify(r, secret_of, *parse_amz_date("20261206T000100Z"), "sagemaker");
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().code, kInvalidSignature);
}

// A protocol request signed here, and what each spoiled part of it is answered with.
class SignedHere : public ::testing::Test {
 protected:
  void SetUp() override {
    request_ = {"POST",
                "/",
                {},
                {{"Host", "127.0.0.1:7117"},
                 {"Content-Type", "application/x-amz-json-1.1"},
                 {"X-Amz-Target", "SageMaker.DeleteCluster"},
                 {"X-Amz-Date", amz_date(now_)}},
                R"({"ClusterName":"demo"})"};
  }
  Request signed_with(const std::string& id, const std::string& secret) const {
    Request r = request_;
    r.headers.push_back({"Authorization", sign(r, id, secret, "us-east-1", "sagemaker")});
    return r;
  }
  Result<std::string> check(const Request& r) const {
    return verify(
        r,
        [this](const std::string& id) -> std::optional<std::string> {
          auto it = keys_.find(id);
          return it == keys_.end() ? std::nullopt : std::optional<std::string>(it->second);
        },
        now_, "sagemaker");
  }
  std::string code_of(const Request& r) const {
    auto result = check(r);
    return result ? "ok" : result.error().code;
  }

  double now_ = 1796000000;
  std::map<std::string, std::string> keys_ = {{"AKIAONE", "secret-one"}};
  Request request_;
};

TEST_F(SignedHere, AcceptsTheRightSecret) {
  EXPECT_EQ(code_of(signed_with("AKIAONE", "secret-one")), "ok");
}

TEST_F(SignedHere, RefusesAWrongSecretWithoutShowingEither) {
  auto result = check(signed_with("AKIAONE", "secret-two"));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, kInvalidSignature);
  EXPECT_EQ(result.error().message.find("secret-one"), std::string::npos);
}

TEST_F(SignedHere, RefusesAnUnknownKey) {
  EXPECT_EQ(code_of(signed_with("AKIATWO", "secret-one")), kUnrecognizedClient);
}

TEST_F(SignedHere, RefusesAMissingSignature) {
  EXPECT_EQ(code_of(request_), kMissingAuthenticationToken);
}

TEST_F(SignedHere, RefusesAChangedBodyTargetOrHost) {
  Request body = signed_with("AKIAONE", "secret-one");
  body.body = R"({"ClusterName":"other"})";
  EXPECT_EQ(code_of(body), kInvalidSignature);
  Request target = signed_with("AKIAONE", "secret-one");
  target.headers[2].second = "SageMaker.CreateCluster";
  EXPECT_EQ(code_of(target), kInvalidSignature);
  Request host = signed_with("AKIAONE", "secret-one");
  host.headers[0].second = "127.0.0.1:7118";
  EXPECT_EQ(code_of(host), kInvalidSignature);
}

TEST_F(SignedHere, RefusesAnOldOrFutureDate) {
  request_.headers[3].second = amz_date(now_ - 16 * 60);
  EXPECT_EQ(code_of(signed_with("AKIAONE", "secret-one")), kInvalidSignature);
  request_.headers[3].second = amz_date(now_ + 16 * 60);
  EXPECT_EQ(code_of(signed_with("AKIAONE", "secret-one")), kInvalidSignature);
}

TEST_F(SignedHere, RequiresHostDateAndTargetSigned) {
  Request r = request_;
  Request unsigned_target = r;
  unsigned_target.headers.erase(unsigned_target.headers.begin() + 2);
  std::string auth = sign(unsigned_target, "AKIAONE", "secret-one", "us-east-1", "sagemaker");
  r.headers.push_back({"Authorization", auth});
  EXPECT_EQ(code_of(r), kIncompleteSignature);
  Request no_date = request_;
  no_date.headers.erase(no_date.headers.begin() + 3);
  no_date.headers.push_back({"Authorization", auth});
  EXPECT_EQ(code_of(no_date), kIncompleteSignature);
}

TEST_F(SignedHere, RefusesAnotherServicesScope) {
  Request r = request_;
  r.headers.push_back({"Authorization", sign(r, "AKIAONE", "secret-one", "us-east-1", "s3")});
  EXPECT_EQ(code_of(r), kInvalidSignature);
}

TEST_F(SignedHere, RefusesAPayloadHashThatIsNotTheBodys) {
  request_.headers.push_back({"X-Amz-Content-Sha256", sha256_hex("something else")});
  EXPECT_EQ(code_of(signed_with("AKIAONE", "secret-one")), kInvalidSignature);
}

TEST(SigV4Parse, MalformedAuthorizationHeadersAreIncomplete) {
  for (const char* header :
       {"AWS4-HMAC-SHA256", "Bearer abc", "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1",
        "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date",
        "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=x-amz-date;host, Signature="
        "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host, Signature=xyz",
        "AWS4-HMAC-SHA256 garbage"}) {
    auto parsed = parse_authorization(header);
    ASSERT_FALSE(parsed) << header;
    EXPECT_EQ(parsed.error().code, kIncompleteSignature) << header;
  }
}

TEST(SigV4Parse, CanonicalUriEncodesAndRemovesDotSegments) {
  Request r{"GET", "/a/./b/../c d", {}, {{"Host", "h"}, {"X-Amz-Date", kVectorDate}}, ""};
  std::string canonical = canonical_request(r, {"host"}, "x");
  EXPECT_EQ(canonical.substr(0, canonical.find('\n', 4)), "GET\n/a/c%20d");
  EXPECT_EQ(uri_encode("a b/~", false), "a%20b%2F~");
  EXPECT_EQ(amz_date(*parse_amz_date("20150830T123600Z")), "20150830T123600Z");
  EXPECT_FALSE(parse_amz_date("2015-08-30T12:36:00Z"));
}

}  // namespace
}  // namespace endure::controller::sigv4
