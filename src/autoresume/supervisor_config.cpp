#include "autoresume/supervisor_config.h"

#include "api/node_files.h"

namespace endure::autoresume {

namespace {

SupervisorConfig from_file(const api::AutoResumeConfig& file) {
  SupervisorConfig c;
  c.endpoint = file.endpoint;
  c.ca_file = file.ca_file;
  c.cluster_name = file.cluster_name;
  c.token = file.token;
  c.max_resumes = file.max_resumes;
  return c;
}

}  // namespace

Result<SupervisorConfig> SupervisorConfig::from_json(const json& j) {
  auto file = api::AutoResumeConfig::from_json(j);
  if (!file) return file.error();
  return from_file(*file);
}

Result<SupervisorConfig> load_supervisor_config() {
  auto file = api::load_auto_resume_config();
  if (!file) return file.error();
  return from_file(*file);
}

}  // namespace endure::autoresume
