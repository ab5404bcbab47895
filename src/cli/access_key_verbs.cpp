// The access key verbs: create-access-key, list-access-keys, delete-access-key. The keys
// sign requests of the cloud service's own clients (aws CLI, boto3) to endured; these
// verbs manage them through /v1 with the operator token.
#include <ostream>

#include "api/messages.h"
#include "cli/session.h"
#include "cli/table.h"

namespace endure::cli {

namespace k = api::key_field;

namespace {

void print_key(const json& reply, std::ostream& out) {
  const json* key = find_path(reply, k::kAccessKey);
  if (!key) return;
  out << format_fields({{k::kAccessKeyId, cell_text(find_path(*key, k::kAccessKeyId))},
                        {k::kSecretAccessKey, cell_text(find_path(*key, k::kSecretAccessKey))},
                        {k::kCreateDate, cell_text(find_path(*key, k::kCreateDate))}});
}

void print_keys(const json& reply, std::ostream& out) {
  const json* list = find_path(reply, k::kAccessKeyMetadata);
  out << format_json_table(list ? *list : json(),
                           {same(k::kAccessKeyId), same(k::kStatus), same(k::kCreateDate)});
}

void print_nothing(const json&, std::ostream&) {}

}  // namespace

void add_access_key_verbs(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* create = app.add_subcommand(
      "create-access-key",
      "Make an access key pair for the aws CLI and boto3 (--endpoint-url endured's URL); the "
      "secret is shown this once");
  auto create_request = std::make_shared<RequestBuilder>(create);
  on_run(create, selected, [s, create_request] {
    return s->run(api::kCreateAccessKey, create_request->build(), {print_key});
  });

  CLI::App* list = app.add_subcommand(
      "list-access-keys", "List the access keys endured accepts signed requests from (no secrets)");
  auto list_request = std::make_shared<RequestBuilder>(list);
  on_run(list, selected, [s, list_request] {
    return s->run(api::kListAccessKeys, list_request->build(), {print_keys});
  });

  CLI::App* remove = app.add_subcommand(
      "delete-access-key", "Delete an access key: requests signed with it are refused from now on");
  auto remove_request = std::make_shared<RequestBuilder>(remove);
  remove_request->add(Kind::kText, "--access-key-id", k::kAccessKeyId, "the key's AccessKeyId",
                      true);
  on_run(remove, selected, [s, remove_request] {
    return s->run(api::kDeleteAccessKey, remove_request->build(), {print_nothing});
  });
}

}  // namespace endure::cli
