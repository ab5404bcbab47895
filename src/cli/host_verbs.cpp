// The host pool verbs: register-host-pools, list-hosts, return-host.
#include "api/messages.h"
#include "api/wire.h"
#include "cli/session.h"
#include "cli/table.h"

namespace endure::cli {

namespace f = api::field;

void add_host_verbs(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* reg = app.add_subcommand(
      "register-host-pools",
      "Register the machines endure may use, by pool: --cli-input-json file://pools.json "
      "(registered again, the file is merged with the hosts known)");
  auto pools = std::make_shared<RequestBuilder>(reg);
  pools->add(Kind::kJsonArray, "--pools", f::kPools,
             "the pools as a JSON array (inline or file://PATH)", true);
  on_run(reg, selected, [s, pools] {
    return s->run(api::kRegisterHostPools, pools->build(), {print_hosts, true});
  });

  CLI::App* list = app.add_subcommand("list-hosts", "List the registered hosts and their state");
  auto list_request = std::make_shared<RequestBuilder>(list);
  list_request->add(Kind::kText, "--pool-name", f::kPoolName, "only this pool's hosts");
  on_run(list, selected, [s, list_request] {
    return s->run(api::kListHosts, list_request->build(), {print_hosts, true});
  });

  CLI::App* ret = app.add_subcommand(
      "return-host", "Return a repaired (Quarantined) host to its pool; it is checked first");
  auto ret_request = std::make_shared<RequestBuilder>(ret);
  ret_request->add(Kind::kText, "--host-name", f::kHostName, "the host's HostName", true);
  on_run(ret, selected, [s, ret_request] {
    return s->run(api::kReturnHost, ret_request->build(), {print_host, true});
  });
}

}  // namespace endure::cli
