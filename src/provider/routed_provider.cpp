#include "provider/routed_provider.h"

#include <set>

namespace endure::provider {

Status RoutedProvider::set_aside(const std::string& cluster_id, const std::string& instance_id,
                                 const std::string& reason) {
  return hosts_.set_aside(cluster_id, instance_id, reason);
}

Status RoutedProvider::rename(const std::string& c, const std::string& i,
                              const std::string& hostname) {
  return of(c, i).rename(c, i, hostname);
}

Result<int> RoutedProvider::claim_cluster_index(const std::string& cluster_id, int index) {
  return local_.claim_cluster_index(cluster_id, index);
}

Status RoutedProvider::prepare_cluster(const std::string& cluster_id) {
  return local_.prepare_cluster(cluster_id);
}

Result<int> RoutedProvider::launch(const LaunchRequest& request) {
  return request.host_name.empty() ? local_.launch(request) : hosts_.launch(request);
}

Result<int> RoutedProvider::reboot(const std::string& c, const std::string& i) {
  return of(c, i).reboot(c, i);
}

Result<int> RoutedProvider::reimage(const std::string& c, const std::string& i) {
  return of(c, i).reimage(c, i);
}

bool RoutedProvider::running(const std::string& c, const std::string& i) {
  return of(c, i).running(c, i);
}

NodeProbe RoutedProvider::probe(const std::string& c, const std::string& i) {
  return of(c, i).probe(c, i);
}

Status RoutedProvider::restart_agent(const std::string& c, const std::string& i) {
  return of(c, i).restart_agent(c, i);
}

int RoutedProvider::pid(const std::string& c, const std::string& i) { return of(c, i).pid(c, i); }

Status RoutedProvider::terminate(const std::string& c, const std::string& i) {
  return of(c, i).terminate(c, i);
}

Status RoutedProvider::destroy(const std::string& c, const std::string& i) {
  // A node on a host may also have left local files (a launch before its host was known).
  if (hosts_.holds(c, i)) {
    if (Status s = hosts_.destroy(c, i); !s) return s;
  }
  return local_.destroy(c, i);
}

Status RoutedProvider::write_file(const std::string& c, const std::string& i,
                                  const std::string& path_in_node, const std::string& content) {
  return of(c, i).write_file(c, i, path_in_node, content);
}

process::Output RoutedProvider::exec(const std::string& c, const std::string& i,
                                     const std::vector<std::string>& argv,
                                     std::chrono::milliseconds timeout) {
  return of(c, i).exec(c, i, argv, timeout);
}

std::filesystem::path RoutedProvider::lifecycle_log(const std::string& c, const std::string& i) {
  return of(c, i).lifecycle_log(c, i);
}

std::string RoutedProvider::boot_diagnostics(const std::string& c, const std::string& i) {
  return of(c, i).boot_diagnostics(c, i);
}

std::vector<std::string> RoutedProvider::instance_ids(const std::string& cluster_id) {
  std::set<std::string> ids;
  for (auto& id : local_.instance_ids(cluster_id)) ids.insert(std::move(id));
  for (auto& id : hosts_.instance_ids(cluster_id)) ids.insert(std::move(id));
  return {ids.begin(), ids.end()};
}

Status RoutedProvider::remove_cluster(const std::string& cluster_id) {
  if (Status s = hosts_.remove_cluster(cluster_id); !s) return s;
  return local_.remove_cluster(cluster_id);
}

Result<std::filesystem::path> RoutedProvider::resolve_lifecycle_source(
    const std::string& field, const std::string& source_uri, const std::string& on_create) {
  return local_.resolve_lifecycle_source(field, source_uri, on_create);
}

Result<FaultDrill*> RoutedProvider::drill(const std::string& c, const std::string& i) {
  if (hosts_.holds(c, i)) {
    return make_error("UnsupportedOperation",
                      "fault drills are not available on registered hosts (instance " + i + ")");
  }
  return static_cast<FaultDrill*>(&local_);
}

Status RoutedProvider::freeze(const std::string& c, const std::string& i) {
  auto d = drill(c, i);
  return d ? (*d)->freeze(c, i) : Status(d.error());
}

Status RoutedProvider::append_kernel_log(const std::string& c, const std::string& i,
                                         const std::string& message) {
  auto d = drill(c, i);
  return d ? (*d)->append_kernel_log(c, i, message) : Status(d.error());
}

Status RoutedProvider::fill_local_disk(const std::string& c, const std::string& i) {
  auto d = drill(c, i);
  return d ? (*d)->fill_local_disk(c, i) : Status(d.error());
}

Status RoutedProvider::hang_shared_fs(const std::string& c, const std::string& i) {
  auto d = drill(c, i);
  return d ? (*d)->hang_shared_fs(c, i) : Status(d.error());
}

Status RoutedProvider::kill_slurmd(const std::string& c, const std::string& i) {
  auto d = drill(c, i);
  return d ? (*d)->kill_slurmd(c, i) : Status(d.error());
}

}  // namespace endure::provider
