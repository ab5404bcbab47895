// Signature Version 4: how the cloud service's clients (the aws CLI, boto3, the SDKs) sign a
// request, and how endured checks that signature. The steps are the published ones: the
// canonical request, the string to sign, the signing key derived from the secret by HMAC-
// SHA256 over date, region, service and "aws4_request", and the signature over the string.
//
//   sigv4::Request req{"POST", "/", {}, headers, body};
//   auto who = sigv4::verify(req, secret_of, ids::now_seconds(), "sagemaker");
//   if (!who) reply(who.error());   // code: one of the k* codes below
//
// Pure functions of their arguments (the clock is passed in), so the verifier is tested
// against AWS's published test vectors and against requests signed here.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace endure::controller::sigv4 {

inline constexpr const char* kAlgorithm = "AWS4-HMAC-SHA256";
// A request whose X-Amz-Date is further than this from endured's clock is refused, as the
// service refuses it: a captured request cannot be replayed later.
inline constexpr double kMaxSkewSeconds = 15 * 60;

// The errors the service answers an unauthenticated request with (the reply's __type).
inline constexpr const char* kMissingAuthenticationToken = "MissingAuthenticationToken";
inline constexpr const char* kIncompleteSignature = "IncompleteSignature";
inline constexpr const char* kUnrecognizedClient = "UnrecognizedClientException";
inline constexpr const char* kInvalidSignature = "InvalidSignatureException";

// A request as received: the path as sent (still percent-encoded), the query's parameters
// decoded, the headers as sent (any case, repeated names allowed), the body.
struct Request {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// The parts of an Authorization header "AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/
// SERVICE/aws4_request, SignedHeaders=a;b, Signature=HEX".
struct Authorization {
  std::string access_key_id;
  std::string date;  // YYYYMMDD
  std::string region;
  std::string service;
  std::vector<std::string> signed_headers;  // lower case, as listed
  std::string signature;                    // 64 lower-case hex digits
  std::string scope() const { return date + "/" + region + "/" + service + "/aws4_request"; }
};

// Lower-case hex of SHA-256(data).
std::string sha256_hex(std::string_view data);
// HMAC-SHA256(key, data), raw bytes.
std::string hmac_sha256(std::string_view key, std::string_view data);
std::string to_hex(std::string_view bytes);

// kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request").
std::string signing_key(std::string_view secret, std::string_view date, std::string_view region,
                        std::string_view service);

// RFC 3986 encoding: unreserved characters (A-Z a-z 0-9 - _ . ~) stay, every other byte is
// %XX in upper case; '/' stays when keep_slash.
std::string uri_encode(std::string_view text, bool keep_slash);

// The canonical request: method, canonical URI (the path's dot segments removed, encoded
// again as the SDKs do for every service but S3), canonical query, the signed headers
// (lower case, values trimmed with inner runs of spaces made one, repeated ones joined by
// ','), the signed header list and the payload's hash.
std::string canonical_request(const Request& request,
                              const std::vector<std::string>& signed_headers,
                              std::string_view payload_hash);

std::string string_to_sign(std::string_view amz_date, std::string_view scope,
                           std::string_view canonical_request);

// Reads an Authorization header; an IncompleteSignature error naming what is missing.
Result<Authorization> parse_authorization(std::string_view header);

// The Authorization header value for request, signed with every header it holds (the host
// and X-Amz-Date headers must be among them). For tests and for clients written here.
std::string sign(const Request& request, std::string_view access_key_id, std::string_view secret,
                 std::string_view region, std::string_view service);

// YYYYMMDD'T'HHMMSS'Z' for a time, and back (nullopt when text is not that form).
std::string amz_date(double epoch_seconds);
std::optional<double> parse_amz_date(std::string_view text);

// The secret of an access key id; nullopt for an unknown one.
using SecretLookup = std::function<std::optional<std::string>(const std::string& access_key_id)>;

// Checks request's signature for service. Its access key id when the signature holds; else
// an error whose code is one of the k* codes above and whose message never holds a secret
// or the expected signature. Host and X-Amz-Date (and X-Amz-Target when sent) must be
// signed; an X-Amz-Content-Sha256 header must be the body's hash.
Result<std::string> verify(const Request& request, const SecretLookup& secret_of, double now,
                           std::string_view service);

}  // namespace endure::controller::sigv4
