#include "controller/front/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <time.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "common/ids.h"

namespace endure::controller::sigv4 {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A header value as signed: trimmed, each inner run of blanks made one space.
std::string header_value(std::string_view value) {
  std::string out;
  bool blank = false;
  for (char c : trim(value)) {
    if (c == ' ' || c == '\t') {
      blank = true;
      continue;
    }
    if (blank) out += ' ';
    blank = false;
    out += c;
  }
  return out;
}

// The request's headers by lower-case name, repeated ones joined by ','.
std::map<std::string, std::string> headers_by_name(const Request& request) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : request.headers) {
    std::string& slot = out[lower(name)];
    slot += (slot.empty() ? "" : ",") + header_value(value);
  }
  return out;
}

// RFC 3986 section 5.2.4, on the path alone.
std::string remove_dot_segments(std::string_view path) {
  std::vector<std::string_view> kept;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view segment = path.substr(start, end - start);
    if (segment == "..") {
      if (!kept.empty()) kept.pop_back();
    } else if (segment != "." && !segment.empty()) {
      kept.push_back(segment);
    }
    start = end + 1;
  }
  std::string out;
  for (auto s : kept) out += "/" + std::string(s);
  // A trailing slash stays, as the SDKs keep it.
  if (out.empty() || (path.size() > 1 && path.back() == '/')) out += "/";
  return out;
}

std::string canonical_query(const Request& request) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& [k, v] : request.query)
    pairs.push_back({uri_encode(k, false), uri_encode(v, false)});
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [k, v] : pairs) out += (out.empty() ? "" : "&") + k + "=" + v;
  return out;
}

std::string join(const std::vector<std::string>& parts, char separator) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(1, separator)) + p;
  return out;
}

Error incomplete(const std::string& message) { return make_error(kIncompleteSignature, message); }

}  // namespace

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 0xf];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr);
  return to_hex(std::string_view(reinterpret_cast<const char*>(digest), size));
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &size);
  return std::string(reinterpret_cast<const char*>(mac), size);
}

std::string signing_key(std::string_view secret, std::string_view date, std::string_view region,
                        std::string_view service) {
  std::string k_date = hmac_sha256("AWS4" + std::string(secret), date);
  std::string k_region = hmac_sha256(k_date, region);
  std::string k_service = hmac_sha256(k_region, service);
  return hmac_sha256(k_service, "aws4_request");
}

std::string uri_encode(std::string_view text, bool keep_slash) {
  static const char* digits = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 0xf];
    }
  }
  return out;
}

std::string canonical_request(const Request& request,
                              const std::vector<std::string>& signed_headers,
                              std::string_view payload_hash) {
  auto headers = headers_by_name(request);
  std::string canonical_headers;
  for (const auto& name : signed_headers) canonical_headers += name + ":" + headers[name] + "\n";
  return request.method + "\n" + uri_encode(remove_dot_segments(request.path), true) + "\n" +
         canonical_query(request) + "\n" + canonical_headers + "\n" + join(signed_headers, ';') +
         "\n" + std::string(payload_hash);
}

std::string string_to_sign(std::string_view amz_date, std::string_view scope,
                           std::string_view canonical_request) {
  return std::string(kAlgorithm) + "\n" + std::string(amz_date) + "\n" + std::string(scope) + "\n" +
         sha256_hex(canonical_request);
}

Result<Authorization> parse_authorization(std::string_view header) {
  std::string_view algorithm = kAlgorithm;
  header = trim(header);
  if (header.substr(0, algorithm.size()) != algorithm || header.size() == algorithm.size() ||
      header[algorithm.size()] != ' ') {
    return incomplete("Authorization header: must start with " + std::string(kAlgorithm) +
                      " (Signature Version 4)");
  }
  std::map<std::string, std::string> parts;
  std::string_view rest = header.substr(algorithm.size() + 1);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return incomplete("Authorization header: '" + std::string(item.substr(0, 40)) +
                        "' is not a key=value pair");
    }
    parts[std::string(trim(item.substr(0, eq)))] = std::string(trim(item.substr(eq + 1)));
  }
  for (const char* key : {"Credential", "SignedHeaders", "Signature"}) {
    if (parts[key].empty()) {
      return incomplete(std::string("Authorization header requires '") + key + "' parameter");
    }
  }
  Authorization out;
  std::vector<std::string> scope;
  std::string_view credential = parts["Credential"];
  for (size_t start = 0;;) {
    size_t slash = credential.find('/', start);
    scope.emplace_back(credential.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (scope.size() != 5 || scope[4] != "aws4_request" || scope[0].empty() || scope[1].size() != 8 ||
      scope[2].empty() || scope[3].empty()) {
    return incomplete(
        "Authorization header: Credential must be ACCESS_KEY_ID/YYYYMMDD/REGION/"
        "SERVICE/aws4_request");
  }
  out.access_key_id = scope[0];
  out.date = scope[1];
  out.region = scope[2];
  out.service = scope[3];
  std::string_view names = parts["SignedHeaders"];
  for (size_t start = 0;;) {
    size_t semi = names.find(';', start);
    out.signed_headers.push_back(lower(names.substr(start, semi - start)));
    if (semi == std::string_view::npos) break;
    start = semi + 1;
  }
  if (!std::is_sorted(out.signed_headers.begin(), out.signed_headers.end()) ||
      std::adjacent_find(out.signed_headers.begin(), out.signed_headers.end()) !=
          out.signed_headers.end() ||
      std::find(out.signed_headers.begin(), out.signed_headers.end(), "") !=
          out.signed_headers.end()) {
    return incomplete("Authorization header: SignedHeaders must be distinct names in sorted order");
  }
  out.signature = parts["Signature"];
  bool hex = out.signature.size() == 64 &&
             std::all_of(out.signature.begin(), out.signature.end(),
                         [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  if (!hex) return incomplete("Authorization header: Signature must be 64 hex digits");
  out.signature = lower(out.signature);
  return out;
}

std::string amz_date(double epoch_seconds) {
  time_t whole = static_cast<time_t>(std::floor(epoch_seconds));
  struct tm t;
  gmtime_r(&whole, &t);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &t);
  return buf;
}

std::optional<double> parse_amz_date(std::string_view text) {
  if (text.size() != 16 || text[8] != 'T' || text[15] != 'Z') return std::nullopt;
  struct tm t = {};
  std::string s(text);
  const char* end = strptime(s.c_str(), "%Y%m%dT%H%M%SZ", &t);
  if (!end || *end != '\0') return std::nullopt;
  return static_cast<double>(timegm(&t));
}

std::string sign(const Request& request, std::string_view access_key_id, std::string_view secret,
                 std::string_view region, std::string_view service) {
  auto headers = headers_by_name(request);
  std::vector<std::string> names;
  for (const auto& [name, value] : headers) names.push_back(name);
  std::string date = headers["x-amz-date"];
  std::string scope =
      date.substr(0, 8) + "/" + std::string(region) + "/" + std::string(service) + "/aws4_request";
  std::string to_sign =
      string_to_sign(date, scope, canonical_request(request, names, sha256_hex(request.body)));
  std::string signature =
      to_hex(hmac_sha256(signing_key(secret, date.substr(0, 8), region, service), to_sign));
  return std::string(kAlgorithm) + " Credential=" + std::string(access_key_id) + "/" + scope +
         ", SignedHeaders=" + join(names, ';') + ", Signature=" + signature;
}

Result<std::string> verify(const Request& request, const SecretLookup& secret_of, double now,
                           std::string_view service) {
  auto headers = headers_by_name(request);
  auto found = headers.find("authorization");
  if (found == headers.end() || found->second.empty()) {
    return make_error(kMissingAuthenticationToken, "Missing Authentication Token");
  }
  auto auth = parse_authorization(found->second);
  if (!auth) return auth.error();

  auto date_header = headers.find("x-amz-date");
  if (date_header == headers.end()) {
    return incomplete("Authorization header requires existence of a 'X-Amz-Date' header");
  }
  auto signed_at = parse_amz_date(date_header->second);
  if (!signed_at) return incomplete("X-Amz-Date: must be YYYYMMDD'T'HHMMSS'Z'");
  if (*signed_at < now - kMaxSkewSeconds) {
    return make_error(kInvalidSignature,
                      "Signature expired: " + date_header->second + " is now earlier than " +
                          amz_date(now - kMaxSkewSeconds) + " (" + amz_date(now) + " - 15 min.)");
  }
  if (*signed_at > now + kMaxSkewSeconds) {
    return make_error(kInvalidSignature, "Signature not yet current: " + date_header->second +
                                             " is still later than " +
                                             amz_date(now + kMaxSkewSeconds) + " (" +
                                             amz_date(now) + " + 15 min.)");
  }

  std::set<std::string> signed_names(auth->signed_headers.begin(), auth->signed_headers.end());
  // X-Amz-Target names the action: signed, it cannot be swapped for another.
  for (const char* must : {"host", "x-amz-date", "x-amz-target"}) {
    bool sent = headers.count(must) > 0;
    if ((sent || std::string_view(must) != "x-amz-target") && !signed_names.count(must)) {
      return incomplete(std::string("'") + must +
                        "' must be a SignedHeader in the AWS Authorization");
    }
  }
  for (const auto& name : auth->signed_headers) {
    if (!headers.count(name)) {
      return incomplete("SignedHeaders names '" + name + "', which the request does not have");
    }
  }
  if (auth->date != date_header->second.substr(0, 8)) {
    return make_error(kInvalidSignature,
                      "Credential should be scoped to a valid date: " + auth->date +
                          " is not X-Amz-Date's " + date_header->second.substr(0, 8));
  }
  if (auth->service != service) {
    return make_error(kInvalidSignature, "Credential should be scoped to correct service: '" +
                                             std::string(service) + "'");
  }

  auto secret = secret_of(auth->access_key_id);
  if (!secret) {
    return make_error(kUnrecognizedClient, "The security token included in the request is invalid");
  }
  std::string payload_hash = sha256_hex(request.body);
  if (auto sent = headers.find("x-amz-content-sha256");
      sent != headers.end() && sent->second != payload_hash) {
    return make_error(
        kInvalidSignature,
        "The provided 'x-amz-content-sha256' header does not match what was computed");
  }
  std::string to_sign =
      string_to_sign(date_header->second, auth->scope(),
                     canonical_request(request, auth->signed_headers, payload_hash));
  std::string expected =
      to_hex(hmac_sha256(signing_key(*secret, auth->date, auth->region, auth->service), to_sign));
  if (!ids::same_secret(expected, auth->signature)) {
    return make_error(kInvalidSignature,
                      "The request signature we calculated does not match the signature you "
                      "provided. Check your AWS Secret Access Key and signing method.");
  }
  return auth->access_key_id;
}

}  // namespace endure::controller::sigv4
