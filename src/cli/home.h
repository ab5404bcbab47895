// Which endured the CLI talks to when no flag or variable names one.
#pragma once

#include <filesystem>
#include <string>

namespace endure::cli {

// The state folder whose endpoint and token the CLI uses: env_home ($ENDURE_HOME) when set;
// else user_home (~/.endure) when an endured has served from it (its endpoint file is
// there); else system_home (the system service's, /var/lib/endure) when this user may read
// its token; else user_home, whose missing token the CLI then names.
std::filesystem::path find_endure_home(const std::string& env_home,
                                       const std::filesystem::path& user_home,
                                       const std::filesystem::path& system_home);

// find_endure_home over this process's environment and the system service's folder.
std::filesystem::path endure_home();

}  // namespace endure::cli
