#include "api/node_files.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "api/node_contract.h"
#include "common/fs.h"

namespace endure::api {
namespace {

// The codec's reading, its error named after the file.
template <class T>
Result<T> read_file_shape(const json& in, const char* code, const char* file) {
  auto read = codec::read<T>(in);
  if (!read) return make_error(code, std::string(file) + ": " + read.error().message);
  return read;
}

}  // namespace

json AgentConfig::to_json() const { return codec::write(*this); }
Result<AgentConfig> AgentConfig::from_json(const json& in) {
  return read_file_shape<AgentConfig>(in, "InvalidConfig", "agent.json");
}

json AutoResumeConfig::to_json() const { return codec::write(*this); }
Result<AutoResumeConfig> AutoResumeConfig::from_json(const json& in) {
  return read_file_shape<AutoResumeConfig>(in, "InvalidConfig", "auto_resume.json");
}

json MemoryStoreConfig::to_json() const { return codec::write(*this); }
Result<MemoryStoreConfig> MemoryStoreConfig::from_json(const json& in) {
  return read_file_shape<MemoryStoreConfig>(in, "InvalidConfig", "memory_store.json");
}

std::map<std::string, std::string> hosts_ipv4(const std::filesystem::path& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string address, name;
    if (!(words >> address) || address.find(':') != std::string::npos) continue;
    while (words >> name) out.emplace(name, address);
  }
  return out;
}

Result<AutoResumeConfig> load_auto_resume_config() {
  const char* path = std::getenv("ENDURE_AUTO_RESUME_CONFIG");
  auto text = fs::read_file(path ? path : node::kAutoResumeConfigPath);
  if (!text) return text.error();
  return AutoResumeConfig::from_json(json::parse(*text, nullptr, false));
}

json LocalBoot::Bind::to_json() const { return codec::write(*this); }
Result<LocalBoot::Bind> LocalBoot::Bind::from_json(const json& in) { return codec::read<Bind>(in); }

json LocalBoot::to_json() const { return codec::write(*this); }
Result<LocalBoot> LocalBoot::from_json(const json& in) {
  return read_file_shape<LocalBoot>(in, "InvalidBoot", "boot.json");
}

}  // namespace endure::api
