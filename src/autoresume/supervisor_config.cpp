#include "autoresume/supervisor_config.h"

#include <cstdlib>

#include "api/node_contract.h"
#include "common/fs.h"

namespace endure::autoresume {

Result<SupervisorConfig> SupervisorConfig::from_json(const json& j) {
  SupervisorConfig c;
  if (!j.is_object() || !j.contains("Endpoint") || !j["Endpoint"].is_string() ||
      !j.contains("ClusterName") || !j["ClusterName"].is_string() || !j.contains("Token") ||
      !j["Token"].is_string()) {
    return make_error("InvalidConfig",
                      "auto_resume.json: needs Endpoint, ClusterName and Token strings");
  }
  c.endpoint = j["Endpoint"];
  c.ca_file = j.value("CaFile", "");
  c.cluster_name = j["ClusterName"];
  c.token = j["Token"];
  c.max_resumes = j.value("MaxResumes", 3);
  return c;
}

Result<SupervisorConfig> load_supervisor_config() {
  const char* path = std::getenv("ENDURE_AUTO_RESUME_CONFIG");
  auto text = fs::read_file(path ? path : node::kAutoResumeConfigPath);
  if (!text) return text.error();
  return SupervisorConfig::from_json(json::parse(*text, nullptr, false));
}

}  // namespace endure::autoresume
