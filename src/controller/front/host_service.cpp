#include "controller/front/host_service.h"

#include "api/messages.h"
#include "provider/host/host_bootstrap.h"
#include "provider/host/host_probe.h"

namespace endure::controller {
namespace {

constexpr std::chrono::seconds kReturnCheckTimeout{10};

api::HostSummary summary(const provider::HostRecord& r) {
  api::HostSummary s;
  s.host_name = r.host.ssh.name;
  s.pool_name = r.pool;
  s.address = r.host.ssh.address;
  s.port = r.host.ssh.port;
  s.state = provider::to_string(r.state);
  if (!r.cluster_id.empty()) s.cluster_id = r.cluster_id;
  if (!r.instance_id.empty()) s.instance_id = r.instance_id;
  if (!r.reason.empty()) s.reason = r.reason;
  return s;
}

json summaries(const std::vector<provider::HostRecord>& records) {
  api::ListHostsReply reply;
  for (const auto& r : records) reply.host_summaries.push_back(summary(r));
  return reply.to_json();
}

}  // namespace

Result<json> HostService::register_pools(const json& request) {
  auto req = api::RegisterHostPoolsRequest::from_json(request);
  if (!req) return req.error();
  auto records = hosts_.register_pools({{api::field::kPools, req->pools}});
  if (!records) return records.error();
  return summaries(*records);
}

Result<json> HostService::list_hosts(const json& request) {
  auto req = api::ListHostsRequest::from_json(request);
  if (!req) return req.error();
  std::string pool = req->pool_name.value_or("");
  if (!pool.empty() && !hosts_.has_pool(pool)) {
    return make_error(api::kResourceNotFound, "no pool named " + pool);
  }
  auto records = hosts_.list(pool);
  if (!records) return records.error();
  return summaries(*records);
}

Result<json> HostService::return_host(const json& request) {
  auto req = api::ReturnHostRequest::from_json(request);
  if (!req) return req.error();
  if (auto s = req->check(); !s) return s.error();
  auto returned = hosts_.return_host(req->host_name, [&](const provider::HostRecord& r) {
    auto ssh = hosts_.ssh(r);
    // What its node left there goes first: the host returns as the pool registered it.
    Status checked = provider::check_host_basics(ssh, kReturnCheckTimeout);
    if (checked) checked = provider::clean_host(ssh);
    ssh.disconnect();
    return checked;
  });
  if (!returned) return returned.error();
  return api::ReturnHostReply{summary(*returned)}.to_json();
}

}  // namespace endure::controller
