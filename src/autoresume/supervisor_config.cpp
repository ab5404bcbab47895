#include "autoresume/supervisor_config.h"

#include <cstdlib>
#include <optional>

#include "api/codec.h"
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
  c.cluster_name = j["ClusterName"];
  c.token = j["Token"];
  // Absent, they keep their defaults; present, they must have their type.
  using api::codec::decode_if_present;
  for (auto error : {decode_if_present(j, "CaFile", c.ca_file),
                     decode_if_present(j, "MaxResumes", c.max_resumes)}) {
    if (error) return make_error("InvalidConfig", "auto_resume.json: " + *error);
  }
  return c;
}

Result<SupervisorConfig> load_supervisor_config() {
  const char* path = std::getenv("ENDURE_AUTO_RESUME_CONFIG");
  auto text = fs::read_file(path ? path : node::kAutoResumeConfigPath);
  if (!text) return text.error();
  return SupervisorConfig::from_json(json::parse(*text, nullptr, false));
}

}  // namespace endure::autoresume
