#include "controller/front/access_keys.h"

#include <algorithm>
#include <cctype>

#include "api/wire.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/log.h"

namespace endure::controller {
namespace {

namespace k = api::key_field;

AccessKey new_key() {
  std::string id = ids::random_hex(16);
  for (char& c : id) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return {"AKIA" + id, ids::random_hex(40), ids::now_seconds()};
}

api::AccessKeyMetadata metadata(const AccessKey& key) {
  return {key.id, ids::iso_time(key.created)};
}

Result<std::vector<AccessKey>> parse(const std::filesystem::path& path, const std::string& text) {
  auto bad = [&](const std::string& rule) {
    return make_error(api::kValidationException, path.string() + ": " + rule);
  };
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains(k::kAccessKeys) ||
      !doc[k::kAccessKeys].is_array()) {
    return bad("must be a JSON object with an AccessKeys array");
  }
  std::vector<AccessKey> keys;
  for (const auto& entry : doc[k::kAccessKeys]) {
    bool ok = entry.is_object() && entry.contains(k::kAccessKeyId) &&
              entry[k::kAccessKeyId].is_string() && entry.contains(k::kSecretAccessKey) &&
              entry[k::kSecretAccessKey].is_string() &&
              !entry[k::kSecretAccessKey].get<std::string>().empty();
    if (!ok) return bad("every AccessKeys entry needs an AccessKeyId and a SecretAccessKey");
    double created = entry.value(k::kCreateDate, 0.0);
    keys.push_back({entry[k::kAccessKeyId].get<std::string>(),
                    entry[k::kSecretAccessKey].get<std::string>(), created});
  }
  return keys;
}

}  // namespace

Result<std::unique_ptr<AccessKeys>> AccessKeys::open(const std::filesystem::path& path) {
  std::unique_ptr<AccessKeys> keys(new AccessKeys(path));
  auto text = fs::read_file(path);
  if (text) {
    auto parsed = parse(path, *text);
    if (!parsed) return parsed.error();
    keys->keys_ = std::move(*parsed);
    return keys;
  }
  if (text.error().code != "NotFound") return text.error();
  AccessKey first = new_key();
  if (auto s = keys->save({first}); !s) return s.error();
  keys->keys_.push_back(first);
  log::info("made access key {} for signed requests (secret in {})", first.id, path.string());
  return keys;
}

std::optional<std::string> AccessKeys::secret_of(const std::string& id) const {
  std::lock_guard lock(mu_);
  for (const auto& key : keys_) {
    if (key.id == id) return key.secret;
  }
  return std::nullopt;
}

Status AccessKeys::save(const std::vector<AccessKey>& keys) const {
  json list = json::array();
  for (const auto& key : keys) {
    list.push_back({{k::kAccessKeyId, key.id},
                    {k::kSecretAccessKey, key.secret},
                    {k::kCreateDate, key.created}});
  }
  return fs::atomic_write_file(path_, json{{k::kAccessKeys, list}}.dump(2) + "\n", 0600);
}

Result<AccessKey> AccessKeys::create() {
  std::lock_guard lock(mu_);
  auto keys = keys_;
  keys.push_back(new_key());
  if (auto s = save(keys); !s) return s.error();
  keys_ = std::move(keys);
  log::info("access key {} made", keys_.back().id);
  return keys_.back();
}

std::vector<AccessKey> AccessKeys::list() const {
  std::lock_guard lock(mu_);
  std::vector<AccessKey> out = keys_;
  for (auto& key : out) key.secret.clear();
  return out;
}

Status AccessKeys::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  auto keys = keys_;
  auto it = std::find_if(keys.begin(), keys.end(), [&](const auto& key) { return key.id == id; });
  if (it == keys.end()) {
    return make_error(api::kResourceNotFound, "AccessKeyId: no access key " + id);
  }
  keys.erase(it);
  if (auto s = save(keys); !s) return s;
  keys_ = std::move(keys);
  log::info("access key {} deleted", id);
  return {};
}

Result<json> AccessKeys::handle(const std::string& action, const json& request) {
  if (action == kCreateAccessKey) {
    auto key = create();
    if (!key) return key.error();
    api::AccessKeyMetadata shown = metadata(*key);
    return api::CreateAccessKeyReply{
        {shown.access_key_id, shown.create_date, shown.status, key->secret}}
        .to_json();
  }
  if (action == kListAccessKeys) {
    api::ListAccessKeysReply reply;
    for (const auto& key : list()) reply.keys.push_back(metadata(key));
    return reply.to_json();
  }
  // DeleteAccessKey
  auto asked = api::DeleteAccessKeyRequest::from_json(request);
  if (!asked) return asked.error();
  if (auto s = remove(asked->access_key_id); !s) return s.error();
  return json::object();
}

}  // namespace endure::controller
