// Messages of the host pool actions: RegisterHostPools, ListHosts, ReturnHost. Include
// messages.h, not this file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/messages_cluster.h"

namespace endure::api {

// A registered host and what endure does with it. State is Available, Bootstrapping,
// InUse or Quarantined; ClusterId and InstanceId name the node it serves (Bootstrapping,
// InUse), Reason why it was set aside (Quarantined).
struct HostSummary {
  static constexpr const char* kName = "HostSummary";
  std::string host_name;
  std::string pool_name;
  std::string address;
  int port = 22;
  std::string state;
  std::optional<std::string> cluster_id;
  std::optional<std::string> instance_id;
  std::optional<std::string> reason;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kHostName, s.host_name);
    v(field::kPoolName, s.pool_name);
    v(field::kAddress, s.address);
    v(field::kPort, s.port);
    v(field::kState, s.state);
    v(field::kClusterId, s.cluster_id);
    v(field::kInstanceId, s.instance_id);
    v(field::kReason, s.reason);
  }
  json to_json() const;
  static Result<HostSummary> from_json(const json& in);
};

// The pool file itself (provider/host/host_pool.h): every pool, each with its hosts. Its
// rules are the pool file's, each error naming its field path (Pools[0].Hosts[2].HostKey).
struct RegisterHostPoolsRequest {
  static constexpr const char* kName = "RegisterHostPoolsRequest";
  json pools = json::array();
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kPools, s.pools);
  }
  json to_json() const;
  static Result<RegisterHostPoolsRequest> from_json(const json& in);
};

struct ListHostsRequest {
  static constexpr const char* kName = "ListHostsRequest";
  std::optional<std::string> pool_name;  // only this pool's hosts
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kPoolName, s.pool_name);
  }
  json to_json() const;
  static Result<ListHostsRequest> from_json(const json& in);
};

// RegisterHostPools' and ListHosts' reply: the hosts, by pool and place in the pool file.
struct ListHostsReply {
  static constexpr const char* kName = "ListHostsReply";
  std::vector<HostSummary> host_summaries;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kHostSummaries, s.host_summaries);
  }
  json to_json() const;
  static Result<ListHostsReply> from_json(const json& in);
};
using RegisterHostPoolsReply = ListHostsReply;

// A repaired host back into its pool: it must be Quarantined and pass basic checks again.
struct ReturnHostRequest {
  static constexpr const char* kName = "ReturnHostRequest";
  std::string host_name;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kHostName, s.host_name);
  }
  Status check() const;
  json to_json() const;
  static Result<ReturnHostRequest> from_json(const json& in);
};

struct ReturnHostReply {
  static constexpr const char* kName = "ReturnHostReply";
  HostSummary host;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kHost, s.host);
  }
  json to_json() const;
  static Result<ReturnHostReply> from_json(const json& in);
};

}  // namespace endure::api
