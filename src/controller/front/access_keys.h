// The access key pairs the cloud service's clients sign their requests with (Signature
// Version 4, see sigv4.h). endured makes one at its first start; the operator makes, lists
// and deletes more through /v1 with the bearer token (`endure create-access-key`, ...). They
// live in one file beside the token, mode 0600, rewritten atomically on every change.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/messages.h"
#include "common/json.h"
#include "common/result.h"

namespace endure::controller {

// The operator's actions on keys (their messages: api/messages_access_keys.h).
using api::kCreateAccessKey;
using api::kDeleteAccessKey;
using api::kListAccessKeys;

// The file's name in endured's home, beside "token".
inline constexpr const char* kAccessKeysFile = "access_keys.json";

struct AccessKey {
  std::string id;      // "AKIA" and 16 upper-case hex digits
  std::string secret;  // 40 hex digits; never logged
  double created = 0;  // seconds since the epoch
};

class AccessKeys {
 public:
  // Reads the keys at path; when the file does not exist, makes it with one new key.
  static Result<std::unique_ptr<AccessKeys>> open(const std::filesystem::path& path);

  // The secret of a key; nullopt for an unknown id.
  std::optional<std::string> secret_of(const std::string& id) const;

  // A new key, saved before it is returned.
  Result<AccessKey> create();
  // Every key, without its secret, oldest first.
  std::vector<AccessKey> list() const;
  // ResourceNotFound for an unknown id; the file is unchanged then.
  Status remove(const std::string& id);

  // The operator's actions: CreateAccessKey (the only reply that holds a secret),
  // ListAccessKeys and DeleteAccessKey {AccessKeyId}.
  Result<json> handle(const std::string& action, const json& request);

 private:
  explicit AccessKeys(std::filesystem::path path) : path_(std::move(path)) {}
  Status save(const std::vector<AccessKey>& keys) const;

  mutable std::mutex mu_;
  std::filesystem::path path_;
  std::vector<AccessKey> keys_;
};

}  // namespace endure::controller
