// The operator's actions on the access keys that sign the cloud clients' requests, in the
// spelling of the cloud's identity service (IAM): CreateAccessKey (the only reply that
// holds a secret), ListAccessKeys and DeleteAccessKey. Include messages.h, not this file.
#pragma once

#include <string>
#include <vector>

#include "api/codec.h"

namespace endure::api {

inline constexpr const char* kCreateAccessKey = "CreateAccessKey";
inline constexpr const char* kListAccessKeys = "ListAccessKeys";
inline constexpr const char* kDeleteAccessKey = "DeleteAccessKey";
namespace key_field {
inline constexpr const char* kAccessKey = "AccessKey";
inline constexpr const char* kAccessKeyId = "AccessKeyId";
inline constexpr const char* kSecretAccessKey = "SecretAccessKey";
inline constexpr const char* kCreateDate = "CreateDate";
inline constexpr const char* kStatus = "Status";
inline constexpr const char* kAccessKeyMetadata = "AccessKeyMetadata";
inline constexpr const char* kAccessKeys = "AccessKeys";
}  // namespace key_field

// A key as ListAccessKeys shows it: never its secret.
struct AccessKeyMetadata {
  static constexpr const char* kName = "AccessKeyMetadata";
  std::string access_key_id;
  std::string create_date;  // ISO 8601
  std::string status = "Active";
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(key_field::kAccessKeyId, s.access_key_id);
    v(key_field::kCreateDate, s.create_date);
    v(key_field::kStatus, s.status);
  }
  json to_json() const;
  static Result<AccessKeyMetadata> from_json(const json& in);
};

// A new key, with its secret (shown this once).
struct NewAccessKey {
  static constexpr const char* kName = "NewAccessKey";
  std::string access_key_id;
  std::string create_date;
  std::string status = "Active";
  std::string secret_access_key;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(key_field::kAccessKeyId, s.access_key_id);
    v(key_field::kCreateDate, s.create_date);
    v(key_field::kStatus, s.status);
    v(key_field::kSecretAccessKey, s.secret_access_key);
  }
  json to_json() const;
  static Result<NewAccessKey> from_json(const json& in);
};

struct CreateAccessKeyReply {
  static constexpr const char* kName = "CreateAccessKeyReply";
  NewAccessKey access_key;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(key_field::kAccessKey, s.access_key);
  }
  json to_json() const;
  static Result<CreateAccessKeyReply> from_json(const json& in);
};

struct ListAccessKeysReply {
  static constexpr const char* kName = "ListAccessKeysReply";
  std::vector<AccessKeyMetadata> keys;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(key_field::kAccessKeyMetadata, s.keys);
  }
  json to_json() const;
  static Result<ListAccessKeysReply> from_json(const json& in);
};

struct DeleteAccessKeyRequest {
  static constexpr const char* kName = "DeleteAccessKeyRequest";
  std::string access_key_id;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(key_field::kAccessKeyId, s.access_key_id);
  }
  Status check() const;  // a non-empty AccessKeyId
  json to_json() const;
  static Result<DeleteAccessKeyRequest> from_json(const json& in);
};

}  // namespace endure::api
